package integration

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// randomBytes is incompressible, so compression can never bring a record
// under a limit it should exceed.
func randomBytes(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// TestLargeRecords: a 900 KB record fits the broker default
// message.max.bytes (1048588) and round-trips; a batch over the broker or
// topic limit is refused with MESSAGE_TOO_LARGE and takes no offset; a topic
// whose max.message.bytes is raised stores a 2 MB record, which a consumer
// must still receive although it exceeds the fetch's per-partition max bytes.
func TestLargeRecords(t *testing.T) {
	b := startBroker(t, brokerOpts{})
	adm := b.admin(t)
	// The client's own batch cap is raised far above every limit under test
	// so that only the broker can reject.
	cl := b.client(t,
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(16<<20),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
	)
	ctx := testCtx(t, 2*time.Minute)

	produce := func(topic string, value []byte) (int64, error) {
		r, err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: value}).First()
		if err != nil {
			return -1, err
		}
		return r.Offset, nil
	}
	readAt := func(t *testing.T, topic string, offset int64, want []byte) {
		t.Helper()
		got := consumeKgoFrom(t, b, topic, map[int32]kgo.Offset{0: kgo.NewOffset().At(offset)}, 1)
		if got[0].Offset != offset || !bytes.Equal(got[0].Value, want) {
			t.Errorf("%s: read back offset %d with %d-byte value, want offset %d with the %d-byte value sent (equal=%v)",
				topic, got[0].Offset, len(got[0].Value), offset, len(want), bytes.Equal(got[0].Value, want))
		}
	}

	t.Run("broker-default-limit", func(t *testing.T) {
		topic := "large-default"
		createTopic(t, adm, topic, 1, nil)
		big := randomBytes(900_000, 1)
		off, err := produce(topic, big)
		if err != nil {
			t.Fatalf("producing a 900000-byte record under the default 1048588 limit: %v", err)
		}
		readAt(t, topic, off, big)

		_, err = produce(topic, randomBytes(1_100_000, 2))
		if !errors.Is(err, kerr.MessageTooLarge) {
			t.Errorf("producing 1100000 bytes over the default limit: got %v, want MESSAGE_TOO_LARGE", err)
		}
		small := []byte("after the rejected one")
		off2, err := produce(topic, small)
		if err != nil {
			t.Fatalf("producing after a rejection: %v", err)
		}
		if off2 != off+1 {
			t.Errorf("record after the rejected one got offset %d, want %d (a rejected batch must not take offsets)", off2, off+1)
		}
		readAt(t, topic, off2, small)
	})

	t.Run("topic-lowered-limit", func(t *testing.T) {
		topic := "large-topic-limit"
		createTopic(t, adm, topic, 1, map[string]*string{"max.message.bytes": strp("100000")})
		ok := randomBytes(90_000, 3)
		off, err := produce(topic, ok)
		if err != nil {
			t.Fatalf("producing 90000 bytes under max.message.bytes=100000: %v", err)
		}
		_, err = produce(topic, randomBytes(150_000, 4))
		if !errors.Is(err, kerr.MessageTooLarge) {
			t.Errorf("producing 150000 bytes over max.message.bytes=100000: got %v, want MESSAGE_TOO_LARGE", err)
		}
		readAt(t, topic, off, ok)
	})

	t.Run("topic-raised-limit", func(t *testing.T) {
		topic := "large-topic-raised"
		createTopic(t, adm, topic, 1, map[string]*string{"max.message.bytes": strp("3000000")})
		huge := randomBytes(2_000_000, 5)
		off, err := produce(topic, huge)
		if err != nil {
			t.Fatalf("producing 2000000 bytes under max.message.bytes=3000000: %v", err)
		}
		// The default per-partition fetch limit is 1 MB; the broker must
		// return the whole first batch anyway.
		readAt(t, topic, off, huge)
	})
}
