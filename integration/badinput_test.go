package integration

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestBadInput sends malformed or hostile input over raw TCP. Each case must
// end with the offending connection closed (or answered, where Kafka
// answers), the process still running, and ordinary clients unaffected.
func TestBadInput(t *testing.T) {
	b := startBroker(t, brokerOpts{})
	adm := b.admin(t)
	createTopic(t, adm, "health", 1, nil)
	createTopic(t, adm, "raw-produce", 1, nil)
	health := b.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()),
		// Health records carry the current time, from which kgo measures
		// this timeout: a wedged broker fails the check instead of hanging it.
		kgo.RecordDeliveryTimeout(20*time.Second))

	// healthy checks that the process runs and a normal client can still
	// produce a record and read it back.
	healthy := func(t *testing.T) {
		t.Helper()
		b.CheckAlive(t)
		ctx := testCtx(t, 30*time.Second)
		v := []byte(fmt.Sprintf("health %s %d", t.Name(), time.Now().UnixNano()))
		r, err := health.ProduceSync(ctx, &kgo.Record{Topic: "health", Partition: 0, Value: v}).First()
		if err != nil {
			t.Fatalf("health produce after %s: %v", t.Name(), err)
		}
		cons := b.client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"health": {0: kgo.NewOffset().At(r.Offset)}}))
		got := pollN(t, cons, 1, 20*time.Second)
		cons.Close()
		if !bytes.Equal(got[0].Value, v) {
			t.Fatalf("health read back %q at offset %d, want %q", got[0].Value, got[0].Offset, v)
		}
		b.CheckAlive(t)
	}
	healthy(t)

	closedAfter := func(name string, payload []byte) {
		t.Run(name, func(t *testing.T) {
			rc := dialRaw(t, b)
			rc.write(payload)
			rc.expectClosed()
			healthy(t)
		})
	}

	// "GET " read as a size is ~1.2 GB, far over socket.request.max.bytes.
	closedAfter("http-request", []byte("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"))
	// A plausible size, then bytes that decode to api key -237.
	closedAfter("garbage-frame", frame(bytes.Repeat([]byte{0xff, 0x13, 0x37, 0x42}, 16)))
	closedAfter("zero-size", []byte{0, 0, 0, 0})
	closedAfter("negative-size", append(binary.BigEndian.AppendUint32(nil, 0xffffffff), "abcdefgh"...))
	// The two 2 GiB readings of a size: the largest int32, and 2<<30, which
	// as an int32 is the smallest. Neither may be allocated or waited for:
	// the connection must close although no body follows.
	closedAfter("size-maxint32", binary.BigEndian.AppendUint32(nil, math.MaxInt32))
	closedAfter("size-2GiB-as-int32", binary.BigEndian.AppendUint32(nil, uint32(2<<30)))
	closedAfter("unknown-api-key", frame(header(9999, 0, 1, "raw")))
	closedAfter("header-cut-short", frame([]byte{0, 3, 0})) // 3 of the header's 8+ bytes

	t.Run("truncated-frame-then-close", func(t *testing.T) {
		rc := dialRaw(t, b)
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(1)
		full := rc.fmt.AppendRequest(nil, req, 1)
		// Announce a bigger frame than we send, and leave it hanging while
		// another client works: one stalled connection must not block others.
		binary.BigEndian.PutUint32(full, uint32(len(full)-4+100))
		rc.write(full)
		healthy(t)
		rc.c.Close()
		healthy(t)
	})

	t.Run("api-versions-unsupported-version", func(t *testing.T) {
		rc := dialRaw(t, b)
		// A future ApiVersions: its body layout is unknown to the broker,
		// which must answer UNSUPPORTED_VERSION in a v0 body listing its
		// ranges, without parsing the body.
		rc.write(frame(header(18, 9999, 77, "raw"), []byte{0x01, 0x02, 0x03, 0x00}))
		resp := kmsg.NewPtrApiVersionsResponse()
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(0)
		rc.readResponse(req, 77, resp)
		if resp.ErrorCode != kerr.UnsupportedVersion.Code {
			t.Errorf("error code %d, want %d (UNSUPPORTED_VERSION)", resp.ErrorCode, kerr.UnsupportedVersion.Code)
		}
		ranges := map[int16]kmsg.ApiVersionsResponseApiKey{}
		for _, k := range resp.ApiKeys {
			ranges[k.ApiKey] = k
		}
		if k, ok := ranges[18]; !ok || k.MinVersion != 0 || k.MaxVersion < 3 {
			t.Errorf("ApiVersions range %+v (present %v), want 0..>=3", k, ok)
		}
		if k, ok := ranges[0]; !ok || k.MinVersion > 3 || k.MaxVersion < 9 {
			t.Errorf("Produce range %+v (present %v), want to include 3..9", k, ok)
		}

		// The client retries on the same connection at a listed version;
		// v3 is flexible in the request, but its response header stays v0.
		req3 := kmsg.NewPtrApiVersionsRequest()
		req3.SetVersion(3)
		req3.ClientSoftwareName = "gokafka-integration"
		req3.ClientSoftwareVersion = "1.0.0"
		ok := rc.roundTrip(req3).(*kmsg.ApiVersionsResponse)
		if ok.ErrorCode != 0 || len(ok.ApiKeys) == 0 {
			t.Errorf("ApiVersions v3 retry: error %d with %d keys", ok.ErrorCode, len(ok.ApiKeys))
		}
		healthy(t)
	})

	t.Run("produce-unknown-partition", func(t *testing.T) {
		rc := dialRaw(t, b)
		batch := buildBatch([][]byte{[]byte("nowhere")}, time.Now().UnixMilli())
		for _, target := range []struct {
			topic     string
			partition int32
		}{{"raw-produce", 9}, {"raw-produce", -1}, {"no-such-topic-raw", 0}} {
			p := producePartitionResult(t, rc.roundTrip(produceRequest(9, 1, target.topic, target.partition, batch)))
			if p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
				t.Errorf("produce to %s[%d]: error %d, want %d (UNKNOWN_TOPIC_OR_PARTITION)",
					target.topic, target.partition, p.ErrorCode, kerr.UnknownTopicOrPartition.Code)
			}
		}
		healthy(t)
	})

	t.Run("produce-corrupt-crc", func(t *testing.T) {
		rc := dialRaw(t, b)
		ts := time.Now().UnixMilli()
		values := func(tag string) [][]byte {
			return [][]byte{[]byte(tag + "-0"), []byte(tag + "-1"), []byte(tag + "-2")}
		}
		// A well-formed batch first proves the hand-built encoding is valid,
		// so the rejections below are about the corruption alone.
		good := rc.roundTrip(produceRequest(9, 1, "raw-produce", 0, buildBatch(values("good"), ts)))
		if p := producePartitionResult(t, good); p.ErrorCode != 0 || p.BaseOffset != 0 {
			t.Fatalf("valid hand-built batch: error %d base offset %d, want 0 and 0", p.ErrorCode, p.BaseOffset)
		}

		flipValue := buildBatch(values("bad"), ts)
		flipValue[len(flipValue)-3] ^= 0x40 // inside the last record's value
		flipCRC := buildBatch(values("bad"), ts)
		flipCRC[18] ^= 0x01
		for name, batch := range map[string][]byte{"value-byte-flipped": flipValue, "crc-byte-flipped": flipCRC} {
			resp := rc.roundTrip(produceRequest(9, 1, "raw-produce", 0, batch))
			if p := producePartitionResult(t, resp); p.ErrorCode != kerr.CorruptMessage.Code {
				t.Errorf("%s: error code %d, want %d (CORRUPT_MESSAGE)", name, p.ErrorCode, kerr.CorruptMessage.Code)
			}
		}

		again := rc.roundTrip(produceRequest(9, 1, "raw-produce", 0, buildBatch(values("again"), ts)))
		if p := producePartitionResult(t, again); p.ErrorCode != 0 || p.BaseOffset != 3 {
			t.Errorf("valid batch after corrupt ones: error %d base offset %d, want 0 and 3 (corrupt batches take no offsets)", p.ErrorCode, p.BaseOffset)
		}
		got := consumeKgo(t, b, "raw-produce", []int32{0}, 6)
		for i, r := range got {
			want := append(values("good"), values("again")...)[i]
			if r.Offset != int64(i) || !bytes.Equal(r.Value, want) || r.Timestamp != ts {
				t.Errorf("record %d: %v, want offset %d value %q ts %d", i, r, i, want, ts)
			}
		}
		healthy(t)
	})
}
