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
