package metrics

import (
	"slices"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/partition"
)

// stateCollector reads the broker's state when /metrics is scraped: the
// metadata image, the local logs, the quorum and the connections. No
// counter is kept for what the state already says.
type stateCollector struct {
	m *Metrics
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	descUnderReplicated = desc("kafka_server_replicamanager_underreplicatedpartitions",
		"Partitions this broker leads whose ISR is smaller than their replica set.")
	descUnderMinISR = desc("kafka_server_replicamanager_underminisrpartitioncount",
		"Partitions this broker leads whose ISR is smaller than min.insync.replicas (acks=all produces fail).")
	descAtMinISR = desc("kafka_server_replicamanager_atminisrpartitioncount",
		"Partitions this broker leads whose ISR is exactly min.insync.replicas (one more loss stops acks=all).")
	descLeaderCount = desc("kafka_server_replicamanager_leadercount",
		"Partitions this broker leads.")
	descPartitionCount = desc("kafka_server_replicamanager_partitioncount",
		"Partition replicas this broker hosts.")
	descActiveController = desc("kafka_controller_kafkacontroller_activecontrollercount",
		"1 on the active controller (the metadata quorum's leader), 0 elsewhere.")
	descOffline = desc("kafka_controller_kafkacontroller_offlinepartitionscount",
		"Partitions without a leader (reported by the active controller, 0 elsewhere).")
	descFenced = desc("kafka_controller_kafkacontroller_fencedbrokercount",
		"Registered brokers that are fenced (reported by the active controller, 0 elsewhere).")
	descActiveBrokers = desc("kafka_controller_kafkacontroller_activebrokercount",
		"Registered brokers that are not fenced (reported by the active controller, 0 elsewhere).")
	descTopics = desc("kafka_controller_kafkacontroller_globaltopiccount",
		"Topics in the cluster (reported by the active controller, 0 elsewhere).")
	descPartitions = desc("kafka_controller_kafkacontroller_globalpartitioncount",
		"Partitions in the cluster (reported by the active controller, 0 elsewhere).")
	descRaftEpoch = desc("kafka_server_raft_metrics_current_epoch",
		"The metadata quorum's current term (raft epoch) as this node knows it.")
	descRaftLeader = desc("kafka_server_raft_metrics_current_leader",
		"The node id of the metadata quorum's leader, -1 if none is known.")
	descRaftCommit = desc("kafka_server_raft_metrics_high_watermark",
		"Index of the last metadata entry the quorum committed, as this node knows it.")
	descRaftLogEnd = desc("kafka_server_raft_metrics_log_end_offset",
		"Index of the last metadata entry stored on this node.")
	descRaftApplied = desc("kafka_server_broker_metadata_metrics_last_applied_record_offset",
		"Index of the last metadata entry this node applied.")
	descConnections = desc("kafka_server_socket_server_metrics_connection_count",
		"Open client connections, by listener.", "listener")
	descOfflineDirs = desc("kafka_log_logmanager_offlinelogdirectorycount",
		"Log dirs of this broker that are offline.")
	descPartitionSeries = desc("gokafka_metrics_partition_series_enabled",
		"1 while per-partition series are exported (this broker hosts at most metrics.partition.series.max partitions).")

	partLabels        = []string{"topic", "partition"}
	descPUnderRepl    = desc("kafka_cluster_partition_underreplicated", "1 if this partition, led here, has an ISR smaller than its replica set.", partLabels...)
	descPISR          = desc("kafka_cluster_partition_insyncreplicascount", "ISR size of this partition, led here.", partLabels...)
	descPReplicas     = desc("kafka_cluster_partition_replicascount", "Replica count of this partition, led here.", partLabels...)
	descPUnderMinISR  = desc("kafka_cluster_partition_underminisr", "1 if this partition, led here, has an ISR smaller than min.insync.replicas.", partLabels...)
	descPAtMinISR     = desc("kafka_cluster_partition_atminisr", "1 if this partition, led here, has an ISR of exactly min.insync.replicas.", partLabels...)
	descPLeaderEpoch  = desc("kafka_cluster_partition_leaderepoch", "Leader epoch of this partition, hosted here.", partLabels...)
	descLogSize       = desc("kafka_log_log_size", "Bytes of this partition's log on this broker.", partLabels...)
	descLogSegments   = desc("kafka_log_log_numlogsegments", "Segments of this partition's log on this broker.", partLabels...)
	descLogStart      = desc("kafka_log_log_logstartoffset", "Log start offset of this partition's log on this broker.", partLabels...)
	descLogEnd        = desc("kafka_log_log_logendoffset", "Log end offset (LEO) of this partition's log on this broker.", partLabels...)
	replicaLabels     = []string{"topic", "partition", "replica"}
	descFollowerLag   = desc("kafka_cluster_partition_replicalag", "Offsets a follower is behind this leader's log end.", replicaLabels...)
	descFollowerLagMs = desc("kafka_cluster_partition_replicalagtimems", "Milliseconds since a follower last reached this leader's log end (0 while caught up).", replicaLabels...)
	groupLabels       = []string{"consumergroup", "topic", "partition"}
	descGroupOffset   = desc("kafka_consumergroup_current_offset", "Offset a consumer group coordinated here committed (kafka_exporter's name).", groupLabels...)
	descGroupLag      = desc("kafka_consumergroup_lag", "High watermark minus the group's committed offset, for partitions whose log is on this broker (kafka_exporter's name).", groupLabels...)
	descLogHW         = desc("kafka_cluster_partition_highwatermark", "High watermark of this partition as this broker knows it.", partLabels...)
)

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descUnderReplicated, descUnderMinISR, descAtMinISR, descLeaderCount,
		descPartitionCount, descActiveController, descOffline, descFenced, descActiveBrokers,
		descTopics, descPartitions, descRaftEpoch, descRaftLeader, descRaftCommit, descRaftLogEnd, descRaftApplied,
		descConnections, descOfflineDirs, descPartitionSeries, descPUnderRepl, descPISR, descPReplicas,
		descPUnderMinISR, descPAtMinISR, descPLeaderEpoch, descLogSize, descLogSegments, descLogStart, descLogEnd,
		descLogHW, descFollowerLag, descFollowerLagMs, descGroupOffset, descGroupLag} {
		ch <- d
	}
}

func gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	src := c.m.sources()
	if src == nil || src.Meta == nil {
		return
	}
	meta := src.Meta
	im := meta.Image()
	self := meta.NodeID()
	bd := meta.BrokerDefaults()

	// Hosted partitions: those whose replica set names this broker.
	hosted := 0
	for _, t := range im.Topics {
		for i := range t.Partitions {
			if slices.Contains(t.Partitions[i].Replicas, self) {
				hosted++
			}
		}
	}
	perPartition := c.m.cfg.PartitionSeriesMax > 0 && hosted <= c.m.cfg.PartitionSeriesMax
	gauge(ch, descPartitionSeries, b2f(perPartition))

	var under, underMin, atMin, leaders int
	for _, t := range im.Topics {
		minISR := cluster.MinInsyncReplicas(im, t, self, bd)
		for i := range t.Partitions {
			p := &t.Partitions[i]
			if !slices.Contains(p.Replicas, self) {
				continue
			}
			labels := []string{t.Name, strconv.Itoa(int(p.Partition))}
			if perPartition {
				gauge(ch, descPLeaderEpoch, float64(p.LeaderEpoch), labels...)
			}
			if p.Leader != self {
				continue
			}
			leaders++
			isUnder := len(p.ISR) < len(p.Replicas)
			isUnderMin := len(p.ISR) < minISR
			isAtMin := len(p.ISR) == minISR
			if isUnder {
				under++
			}
			if isUnderMin {
				underMin++
			}
			if isAtMin {
				atMin++
			}
			if perPartition {
				gauge(ch, descPUnderRepl, b2f(isUnder), labels...)
				gauge(ch, descPUnderMinISR, b2f(isUnderMin), labels...)
				gauge(ch, descPAtMinISR, b2f(isAtMin), labels...)
				gauge(ch, descPISR, float64(len(p.ISR)), labels...)
				gauge(ch, descPReplicas, float64(len(p.Replicas)), labels...)
			}
		}
	}
	gauge(ch, descUnderReplicated, float64(under))
	gauge(ch, descUnderMinISR, float64(underMin))
	gauge(ch, descAtMinISR, float64(atMin))
	gauge(ch, descLeaderCount, float64(leaders))
	gauge(ch, descPartitionCount, float64(hosted))

	active := meta.IsLeader()
	gauge(ch, descActiveController, b2f(active))
	var offline, fenced, live, topics, partitions int
	if active {
		for _, t := range im.Topics {
			topics++
			for i := range t.Partitions {
				partitions++
				if t.Partitions[i].Leader < 0 {
					offline++
				}
			}
		}
		for _, b := range im.Brokers {
			if b.Fenced {
				fenced++
			} else {
				live++
			}
		}
	}
	gauge(ch, descOffline, float64(offline))
	gauge(ch, descFenced, float64(fenced))
	gauge(ch, descActiveBrokers, float64(live))
	gauge(ch, descTopics, float64(topics))
	gauge(ch, descPartitions, float64(partitions))

	q := meta.QuorumPosition()
	gauge(ch, descRaftEpoch, float64(q.Term))
	gauge(ch, descRaftLeader, float64(q.Leader))
	gauge(ch, descRaftCommit, float64(q.CommitIndex))
	gauge(ch, descRaftLogEnd, float64(q.LastIndex))
	gauge(ch, descRaftApplied, float64(q.AppliedIndex))

	if src.Conns != nil {
		for name, n := range src.Conns.ConnectionCounts() {
			gauge(ch, descConnections, float64(n), name)
		}
	}
	if perPartition && src.Replicas != nil {
		for _, f := range src.Replicas.FollowerLags() {
			labels := []string{f.TP.Topic, strconv.Itoa(int(f.TP.Partition)), strconv.Itoa(int(f.Follower))}
			gauge(ch, descFollowerLag, float64(f.Offsets), labels...)
			gauge(ch, descFollowerLagMs, float64(f.Time.Milliseconds()), labels...)
		}
	}
	if perPartition && src.Groups != nil {
		c.collectGroups(ch, src)
	}
	if src.Logs != nil {
		offlineDirs := 0
		for _, d := range src.Logs.LogDirs() {
			if d.Offline {
				offlineDirs++
			}
		}
		gauge(ch, descOfflineDirs, float64(offlineDirs))
	}
	if perPartition && src.Logs != nil {
		for _, t := range im.Topics {
			for i := range t.Partitions {
				p := &t.Partitions[i]
				if !slices.Contains(p.Replicas, self) {
					continue
				}
				l := src.Logs.Get(partition.TopicPartition{Topic: t.Name, Partition: p.Partition})
				if l == nil {
					continue
				}
				labels := []string{t.Name, strconv.Itoa(int(p.Partition))}
				gauge(ch, descLogSize, float64(l.Size()), labels...)
				gauge(ch, descLogSegments, float64(l.NumSegments()), labels...)
				gauge(ch, descLogStart, float64(l.LogStartOffset()), labels...)
				gauge(ch, descLogEnd, float64(l.LogEndOffset()), labels...)
				gauge(ch, descLogHW, float64(l.HighWatermark()), labels...)
			}
		}
	}
}

// collectGroups exports the committed offsets of the groups coordinated
// here and, where the partition's log is on this broker, their lag.
func (c *stateCollector) collectGroups(ch chan<- prometheus.Metric, src *Sources) {
	groups, _ := src.Groups.ListGroups(nil) // those loaded, even while others load
	for _, g := range groups {
		offsets, err := src.Groups.FetchOffsets(g.GroupID, nil)
		if err != nil {
			continue
		}
		for _, o := range offsets {
			if o.Offset < 0 {
				continue
			}
			labels := []string{g.GroupID, o.TP.Topic, strconv.Itoa(int(o.TP.Partition))}
			gauge(ch, descGroupOffset, float64(o.Offset), labels...)
			if src.Logs == nil {
				continue
			}
			if l := src.Logs.Get(o.TP); l != nil {
				gauge(ch, descGroupLag, float64(max(l.HighWatermark()-o.Offset, 0)), labels...)
			}
		}
	}
}
