package integration

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clusterTopics lists every topic with its partition count through a
// Metadata request for all topics, which can never auto-create anything.
func clusterTopics(ctx context.Context, cl *kgo.Client) (map[string]int, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = nil // null: all topics
	req.AllowAutoTopicCreation = false
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, t := range resp.Topics {
		if t.ErrorCode != 0 || t.Topic == nil {
			continue
		}
		out[*t.Topic] = len(t.Partitions)
	}
	return out, nil
}

// waitTopic waits until topic exists with want partitions (want < 0: is absent).
func waitTopic(t *testing.T, cl *kgo.Client, topic string, want int) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ts, err := clusterTopics(ctx, cl)
		if err != nil {
			return err
		}
		n, ok := ts[topic]
		switch {
		case want < 0 && ok:
			return fmt.Errorf("topic %q still exists with %d partitions", topic, n)
		case want >= 0 && !ok:
			return fmt.Errorf("topic %q does not exist", topic)
		case want >= 0 && n != want:
			return fmt.Errorf("topic %q has %d partitions, want %d", topic, n, want)
		}
		return nil
	})
}

// rawMetadata asks for one topic with AllowAutoTopicCreation set as given
// (Metadata v9: flexible, has the flag) and returns the topic's error code.
func rawMetadata(t *testing.T, b *broker, topic string, allowAuto bool) int16 {
	t.Helper()
	rc := dialRaw(t, b)
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(9)
	req.AllowAutoTopicCreation = allowAuto
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp := rc.roundTrip(req).(*kmsg.MetadataResponse)
	if len(resp.Topics) != 1 {
		t.Fatalf("metadata for %q returned %d topics", topic, len(resp.Topics))
	}
	return resp.Topics[0].ErrorCode
}

func configValue(rc kadm.ResourceConfig, key string) (kadm.Config, bool) {
	for _, c := range rc.Configs {
		if c.Key == key {
			return c, true
		}
	}
	return kadm.Config{}, false
}

func describeTopicConfig(t *testing.T, adm *kadm.Client, topic, key string) kadm.Config {
	t.Helper()
	ctx := testCtx(t, 30*time.Second)
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatalf("DescribeConfigs(%s): %v", topic, err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("DescribeConfigs(%s): %v / %v", topic, err, rc.Err)
	}
	c, ok := configValue(rc, key)
	if !ok {
		t.Fatalf("DescribeConfigs(%s) has no %q among %d configs", topic, key, len(rc.Configs))
	}
	return c
}

func TestAutoCreateTopics(t *testing.T) {
	t.Run("enabled", func(t *testing.T) {
		b := startBroker(t, brokerOpts{Env: map[string]string{
			"GOKAFKA_NUM_PARTITIONS":            "2",
			"GOKAFKA_AUTO_CREATE_TOPICS_ENABLE": "true",
		}})
		cl := b.client(t, kgo.AllowAutoTopicCreation())
		ctx := testCtx(t, time.Minute)
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "auto-created", Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatalf("producing to a missing topic with auto-creation on: %v", err)
		}
		waitTopic(t, cl, "auto-created", 2)

		// The request's own flag (v4+) still forbids creation.
		if code := rawMetadata(t, b, "not-auto-created", false); code != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("metadata with AllowAutoTopicCreation=false: error %d, want %d", code, kerr.UnknownTopicOrPartition.Code)
		}
		waitTopic(t, cl, "not-auto-created", -1)
	})

	t.Run("disabled", func(t *testing.T) {
		b := startBroker(t, brokerOpts{Env: map[string]string{
			"GOKAFKA_NUM_PARTITIONS":            "2",
			"GOKAFKA_AUTO_CREATE_TOPICS_ENABLE": "false",
		}})
		cl := b.client(t, kgo.AllowAutoTopicCreation(), kgo.UnknownTopicRetries(2))
		ctx := testCtx(t, time.Minute)
		err := cl.ProduceSync(ctx, &kgo.Record{Topic: "never-created", Value: []byte("x")}).FirstErr()
		if !errors.Is(err, kerr.UnknownTopicOrPartition) {
			t.Errorf("producing to a missing topic with auto-creation off: got %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
		}
		if code := rawMetadata(t, b, "never-created", true); code != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("metadata with AllowAutoTopicCreation=true, broker disabled: error %d, want %d", code, kerr.UnknownTopicOrPartition.Code)
		}
		waitTopic(t, cl, "never-created", -1)
	})
}
