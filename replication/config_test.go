package replication_test

import (
	"testing"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/replication"
)

func TestLogConfigRetentionOnlyUnderDeletePolicy(t *testing.T) {
	im := &cluster.Image{}
	for policy, keep := range map[string]bool{"compact": true, "delete": false, "compact,delete": false, "delete, compact": false} {
		topic := &cluster.TopicInfo{Name: "t", Configs: map[string]string{"cleanup.policy": policy, "retention.ms": "1000", "retention.bytes": "10"}}
		cfg := replication.LogConfig(im, topic, 1, cluster.BrokerDefaults{})
		if keep && (cfg.RetentionMs != -1 || cfg.RetentionBytes != -1) {
			t.Errorf("%s: retention %d ms / %d bytes, want none", policy, cfg.RetentionMs, cfg.RetentionBytes)
		}
		if !keep && (cfg.RetentionMs != 1000 || cfg.RetentionBytes != 10) {
			t.Errorf("%s: retention %d ms / %d bytes, want 1000 / 10", policy, cfg.RetentionMs, cfg.RetentionBytes)
		}
	}
}

func TestLogConfigCarriesCompactionSettings(t *testing.T) {
	im := &cluster.Image{}
	topic := &cluster.TopicInfo{Name: "t", Configs: map[string]string{"cleanup.policy": "compact,delete",
		"min.cleanable.dirty.ratio": "0.2", "min.compaction.lag.ms": "5", "max.compaction.lag.ms": "600", "delete.retention.ms": "7"}}
	cfg := replication.LogConfig(im, topic, 1, cluster.BrokerDefaults{})
	if !cfg.Compact || cfg.MinCleanableDirtyRatio != 0.2 || cfg.MinCompactionLagMs != 5 || cfg.MaxCompactionLagMs != 600 || cfg.DeleteRetentionMs != 7 {
		t.Fatalf("compaction settings not carried: %+v", cfg)
	}
	// The broker's log.cleaner.* values are the defaults.
	bd := cluster.BrokerDefaults{Values: map[string]string{"log.cleaner.min.cleanable.ratio": "0.7", "log.cleaner.delete.retention.ms": "9"}}
	cfg = replication.LogConfig(im, &cluster.TopicInfo{Name: "u", Configs: map[string]string{"cleanup.policy": "compact"}}, 1, bd)
	if cfg.MinCleanableDirtyRatio != 0.7 || cfg.DeleteRetentionMs != 9 {
		t.Fatalf("broker defaults not used: %+v", cfg)
	}
	if cfg = replication.LogConfig(im, &cluster.TopicInfo{Name: "v"}, 1, cluster.BrokerDefaults{}); cfg.Compact {
		t.Fatal("a delete-policy topic is compacted")
	}
}

func TestReplicaSelectorClassAcceptsNoneOrTheRackAwareSelector(t *testing.T) {
	for _, class := range []string{"", replication.RackAwareReplicaSelector} {
		cfg := replication.DefaultConfig()
		cfg.ReplicaSelectorClass = class
		if err := cfg.Validate(); err != nil {
			t.Fatalf("replica.selector.class %q: %v", class, err)
		}
	}
	cfg := replication.DefaultConfig()
	cfg.ReplicaSelectorClass = "com.example.NearestSelector"
	if err := cfg.Validate(); err == nil {
		t.Fatal("an unknown replica.selector.class was accepted")
	}
}
