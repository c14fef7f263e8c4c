package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gokafka/gokafka/integration/confluentgo"
)

// The lines the broker logs at debug level when it opens a fetch session
// and when it answers a session's first incremental fetch
// (handlers/fetch.go).
const (
	logSessionCreated     = "fetch session created"
	logSessionIncremental = "fetch session answered its first incremental fetch"
)

// clusterLogHas reports whether any node's log has a line holding every
// one of parts.
func clusterLogHas(c *cluster, parts ...string) bool {
	for _, b := range c.nodes {
		if brokerLogHas(b, parts...) {
			return true
		}
	}
	return false
}

// TestFetchSessionsWithClientsAndFollowers: on a 3-node cluster, the
// followers replicate through incremental fetch sessions (KIP-227) and a
// franz-go consumer, which opens sessions by default, reads everything
// through them, including records produced while it is parked in an
// incremental fetch. librdkafka (confluent-kafka-go) and sarama consumers
// send sessionless full fetches (neither client implements KIP-227 for
// consumers: librdkafka sends SessionEpoch -1, sarama SessionID 0 and
// epoch -1); they read the same records and open no session.
func TestFetchSessionsWithClientsAndFollowers(t *testing.T) {
	c := startCluster(t, map[string]string{"GOKAFKA_LOG_LEVEL": "debug"})
	const topic = "fetch-sessions"
	const parts = 4
	c.createTopic(t, topic, parts, nil)
	prod := c.client(t)
	sent := produceAll(t, prod, topic, genRecords(200, parts, 227))

	eventually(t, 30*time.Second, func() error {
		if !clusterLogHas(c, logSessionIncremental, "follower=true") {
			return fmt.Errorf("no follower fetched incrementally in a session yet")
		}
		return nil
	})

	t.Run("franz-go", func(t *testing.T) {
		const clientID = "fetchsess-franz"
		cl := c.client(t, kgo.ClientID(clientID), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(300*time.Millisecond))
		var got []rec
		poll := func(want int) {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			for len(got) < want {
				fs := cl.PollFetches(ctx)
				if ctx.Err() != nil {
					t.Fatalf("franz-go read %d of %d records", len(got), want)
				}
				fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch error %s/%d: %v", topic, p, err) })
				fs.EachRecord(func(r *kgo.Record) { got = append(got, fromKgo(r)) })
			}
		}
		poll(len(sent))
		// Parked in incremental fetches now: new records reach it
		// through its sessions.
		eventually(t, 30*time.Second, func() error {
			if !clusterLogHas(c, logSessionIncremental, "client_id="+clientID) {
				return fmt.Errorf("no incremental fetch from %s answered yet", clientID)
			}
			return nil
		})
		more := produceAll(t, prod, topic, genRecords(100, parts, 228))
		poll(len(sent) + len(more))
		checkRecords(t, append(append([]rec(nil), sent...), more...), got)
		sent = append(sent, more...)
	})

	want := map[int32]int64{}
	for _, r := range sent {
		want[r.Partition]++
	}

	t.Run("librdkafka", func(t *testing.T) {
		co := confluentgo.ConsumeOpts{Count: len(sent)}
		for p := range int32(parts) {
			co.Partitions = append(co.Partitions, p)
		}
		got, err := confluentgo.Consume(testCtx(t, 60*time.Second), strings.Join(c.addrs(), ","), topic, co)
		if err != nil {
			t.Fatal(err)
		}
		var recs []rec
		for _, r := range got {
			recs = append(recs, rec{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value})
		}
		checkSameOffsetsAndValues(t, sent, recs)
		if clusterLogHas(c, logSessionCreated, "client_id=rdkafka") {
			t.Error("a session was opened for librdkafka, which fetches without one")
		}
	})

	t.Run("sarama", func(t *testing.T) {
		cfg := saramaConfig(sarama.V3_6_0_0, sarama.CompressionNone)
		cfg.ClientID = "fetchsess-sarama"
		got := consumeSarama(t, c.nodes[0].Addr(), topic, cfg, want)
		checkSameOffsetsAndValues(t, sent, got)
		if clusterLogHas(c, logSessionCreated, "client_id=fetchsess-sarama") {
			t.Error("a session was opened for sarama, which fetches without one")
		}
	})
}

// checkSameOffsetsAndValues requires got to hold exactly want's records
// by partition, offset and value (for clients whose records here carry no
// timestamps or headers).
func checkSameOffsetsAndValues(t *testing.T, want, got []rec) {
	t.Helper()
	type key struct {
		p   int32
		off int64
	}
	w := map[key]string{}
	for _, r := range want {
		w[key{r.Partition, r.Offset}] = string(r.Value)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for _, r := range got {
		v, ok := w[key{r.Partition, r.Offset}]
		if !ok || v != string(r.Value) {
			t.Fatalf("record p%d@%d not as produced", r.Partition, r.Offset)
		}
		delete(w, key{r.Partition, r.Offset})
	}
}
