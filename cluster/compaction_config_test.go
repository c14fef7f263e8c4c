package cluster

import (
	"context"
	"errors"
	"testing"
)

func TestCompactionLagsMustNotConflict(t *testing.T) {
	c := newController(t)
	err := createOne(t, c, TopicSpec{Name: "a", NumPartitions: 1, ReplicationFactor: 1, Configs: map[string]*string{
		"cleanup.policy": str("compact"), "min.compaction.lag.ms": str("1000"), "max.compaction.lag.ms": str("999")}})
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("min.compaction.lag.ms above max.compaction.lag.ms: got %v, want ErrInvalidConfig", err)
	}
	mustCreate(t, c, TopicSpec{Name: "a", NumPartitions: 1, ReplicationFactor: 1, Configs: map[string]*string{"min.compaction.lag.ms": str("1000")}})
	if err := c.SetTopicConfigs(context.Background(), "a", map[string]string{"max.compaction.lag.ms": "10", "min.compaction.lag.ms": "11"}, false); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("alter to conflicting lags: got %v, want ErrInvalidConfig", err)
	}
	if err := c.SetTopicConfigs(context.Background(), "a", map[string]string{"max.compaction.lag.ms": "10"}, false); err != nil {
		t.Fatalf("max.compaction.lag.ms above the default min: %v", err)
	}
}
