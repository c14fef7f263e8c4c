package broker

// Log dir failure handling (Kafka's ReplicaManager.handleLogDirFailure and
// its KRaft JBOD rules). When the partition.Manager takes a log dir
// offline:
//
//   - if it holds the metadata log (the first log.dirs entry) or no log
//     dir is left online, the broker shuts down cleanly and the process
//     exits non-zero, as Kafka does;
//   - otherwise the replicas there stop (their clients get
//     KAFKA_STORAGE_ERROR), the controller is told which partitions were
//     there and every heartbeat names the dir offline, so the controller
//     moves their leadership to other ISR members and drops this broker
//     from their ISR. Every other partition keeps being served. A restart
//     recovers the dir.

import (
	"fmt"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/replication"
)

// registerLogDirs gives the metadata the log dirs' ids, which the broker
// registers. Call it before the broker registers.
func (s *Server) registerLogDirs() {
	var ids [][16]byte
	for _, d := range s.logs.LogDirs() {
		ids = append(ids, d.ID)
	}
	s.meta.SetLogDirs(ids, s.logs.OfflineLogDirIDs)
}

// watchLogDirs handles the log dirs' failures, once the replica manager
// runs.
func (s *Server) watchLogDirs() {
	logs, replicas, meta := s.logs, s.replicas, s.meta
	idOf := map[string][16]byte{}
	for _, d := range logs.LogDirs() {
		idOf[d.Path] = d.ID
	}
	metadataDir := s.cfg.LogDirs[0]
	logs.OnLogDirFailure(func(dir string, cause error) {
		if s.killed.Load() {
			return // a killed broker reports nothing (see Kill)
		}
		handleLogDirFailure(dir, cause, idOf[dir], dir == metadataDir, logs, replicas, meta, s.fatal)
	})
}

func handleLogDirFailure(dir string, cause error, id [16]byte, metadataDir bool, logs *partition.Manager, replicas *replication.Manager,
	meta *cluster.Controller, fatal func(error)) {
	replicas.HandleLogDirFailure(dir)
	if metadataDir || logs.LiveLogDirs() == 0 {
		fatal(fmt.Errorf("log dir %s failed and the broker cannot go on without it (metadata log dir: %v, online log dirs left: %d): %w",
			dir, metadataDir, logs.LiveLogDirs(), cause))
		return
	}
	parts := map[string][]int32{}
	for _, tp := range logs.PartitionsIn(dir) {
		parts[tp.Topic] = append(parts[tp.Topic], tp.Partition)
	}
	meta.ReportOfflineLogDir(id, parts)
}

// fatal asks the process to shut down (Err yields err).
func (s *Server) fatal(err error) {
	select {
	case s.serveErr <- err:
	default:
	}
}
