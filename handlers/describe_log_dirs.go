package handlers

// DescribeLogDirs (key 35), v0-v4: this broker's log dirs, each with the
// partitions it holds (size, and offset lag = max(HW - LEO, 0) as Kafka
// computes it for a current replica), and from v4 the filesystem's total
// and usable bytes (-1 when unknown). A dir that is offline answers
// KAFKA_STORAGE_ERROR with no partitions, as Kafka's
// LogManager.describeLogDirs does. A null topic list asks for every
// partition; a topic list restricts the answer to those partitions. v3
// adds a top-level error code, always NONE here: there are no ACLs to
// refuse CLUSTER DESCRIBE. gokafka has no future replicas (no
// AlterReplicaLogDirs), so IsFuture is always false.
//
// Authorization (authz.go): DESCRIBE on the cluster; without it Kafka
// answers no directories (and CLUSTER_AUTHORIZATION_FAILED from v3).

import (
	"context"
	"path/filepath"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) registerDescribeLogDirs(reg *protocol.Registry) {
	reg.Register(35, 0, 4, h.describeLogDirs)
}

func (h *Handlers) describeLogDirs(_ context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DescribeLogDirsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	if !h.authorizeCluster(req, acl.OpDescribe) {
		// Kafka answers no directories, with the error from v3 on.
		if req.Version >= 3 {
			resp.ErrorCode = errorCode(errClusterAuthorization)
		}
		return resp, nil
	}
	var want map[string]map[int32]bool
	if r.Topics != nil {
		want = map[string]map[int32]bool{}
		for _, t := range r.Topics {
			if want[t.Topic] == nil {
				want[t.Topic] = map[int32]bool{}
			}
			for _, p := range t.Partitions {
				want[t.Topic][p] = true
			}
		}
	}
	for _, d := range h.replicas.DescribeLogDirs() {
		rd := kmsg.NewDescribeLogDirsResponseDir()
		rd.Dir = d.Path
		if abs, err := filepath.Abs(d.Path); err == nil {
			rd.Dir = abs // Kafka reports absolute paths
		}
		rd.TotalBytes, rd.UsableBytes = d.TotalBytes, d.UsableBytes
		if d.Offline {
			rd.ErrorCode = kerr.KafkaStorageError.Code
			resp.Dirs = append(resp.Dirs, rd)
			continue
		}
		idx := map[string]int{}
		for _, p := range d.Partitions {
			if want != nil && !want[p.TP.Topic][p.TP.Partition] {
				continue
			}
			i, ok := idx[p.TP.Topic]
			if !ok {
				i = len(rd.Topics)
				idx[p.TP.Topic] = i
				rt := kmsg.NewDescribeLogDirsResponseDirTopic()
				rt.Topic = p.TP.Topic
				rd.Topics = append(rd.Topics, rt)
			}
			rp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			rp.Partition, rp.Size = p.TP.Partition, p.Size
			rp.OffsetLag = max(p.HW-p.LogEndOffset, 0)
			rd.Topics[i].Partitions = append(rd.Topics[i].Partitions, rp)
		}
		resp.Dirs = append(resp.Dirs, rd)
	}
	return resp, nil
}
