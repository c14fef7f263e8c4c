package cluster

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/rs/zerolog"
)

// BenchmarkCreateTopic10000Partitions is the controller's side of s8:
// validating, placing and committing one topic of 10,000 partitions with
// three replicas each over a one-node raft quorum (json encoding, the
// raft entry, applying it and publishing the image).
func BenchmarkCreateTopic10000Partitions(b *testing.B) {
	c, err := Open(context.Background(), Config{NodeID: 1, NumPartitions: 1, DefaultReplicationFactor: 3, DeleteTopicEnable: true}, quorum(b.TempDir()), zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if err := c.Register(context.Background(), "127.0.0.1", 9092); err != nil {
		b.Fatal(err)
	}
	for id := int32(2); id <= 3; id++ {
		if err := c.log.Propose(context.Background(), &Command{Type: CmdRegisterBroker, Broker: &BrokerInfo{NodeID: id, Host: "127.0.0.1", Port: 9090 + id}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		errs := c.CreateTopics(context.Background(), []TopicSpec{{Name: "t" + strconv.Itoa(i), NumPartitions: 10000, ReplicationFactor: 3}}, false)
		if errs[0] != nil {
			b.Fatal(errs[0])
		}
	}
	t := c.Image().Topic("t0")
	enc, _ := json.Marshal([]*Command{{Type: CmdCreateTopic, Topic: t}})
	b.ReportMetric(float64(len(enc)), "entry-bytes")
}
