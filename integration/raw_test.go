package integration

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawConn speaks the Kafka framing by hand so tests can send what no client
// would: bad sizes, unknown keys, corrupted batches.
type rawConn struct {
	t    testing.TB
	c    net.Conn
	corr int32
	fmt  *kmsg.RequestFormatter
}

func dialRaw(t testing.TB, b *broker) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", b.Addr(), 10*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", b.Addr(), err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c, fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID("gokafka-integration-raw"))}
}

func (rc *rawConn) write(p []byte) {
	rc.t.Helper()
	rc.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := rc.c.Write(p); err != nil {
		rc.t.Fatalf("raw write: %v", err)
	}
}

// send frames req at its set version and returns the correlation id used.
func (rc *rawConn) send(req kmsg.Request) int32 {
	rc.t.Helper()
	rc.corr++
	rc.write(rc.fmt.AppendRequest(nil, req, rc.corr))
	return rc.corr
}

// readFrame reads one size-prefixed response frame.
func (rc *rawConn) readFrame(timeout time.Duration) ([]byte, error) {
	rc.c.SetReadDeadline(time.Now().Add(timeout))
	var size [4]byte
	if _, err := io.ReadFull(rc.c, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > 64<<20 {
		return nil, fmt.Errorf("response frame size %d", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(rc.c, body); err != nil {
		return nil, fmt.Errorf("reading %d-byte response: %w", n, err)
	}
	return body, nil
}

// readResponse reads the next frame, checks its correlation id, strips the
// response header (v1 with tagged fields for flexible requests, except
// ApiVersions whose response header is always v0) and decodes the body into
// resp at req's version.
func (rc *rawConn) readResponse(req kmsg.Request, corr int32, resp kmsg.Response) {
	rc.t.Helper()
	frame, err := rc.readFrame(15 * time.Second)
	if err != nil {
		rc.t.Fatalf("reading response to %s v%d: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	got := int32(binary.BigEndian.Uint32(frame))
	if got != corr {
		rc.t.Fatalf("response correlation id %d, want %d (responses out of order or a response to acks=0)", got, corr)
	}
	body := frame[4:]
	if req.IsFlexible() && req.Key() != 18 {
		body, err = skipTags(body)
		if err != nil {
			rc.t.Fatalf("response header of %s: %v", kmsg.NameForKey(req.Key()), err)
		}
	}
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(body); err != nil {
		rc.t.Fatalf("decoding %s v%d response (%d bytes): %v", kmsg.NameForKey(req.Key()), req.GetVersion(), len(body), err)
	}
}

// roundTrip sends req and decodes its response.
func (rc *rawConn) roundTrip(req kmsg.Request) kmsg.Response {
	rc.t.Helper()
	corr := rc.send(req)
	resp := req.ResponseKind()
	rc.readResponse(req, corr, resp)
	return resp
}

func skipTags(b []byte) ([]byte, error) {
	n, l := binary.Uvarint(b)
	if l <= 0 {
		return nil, errors.New("bad tag count")
	}
	b = b[l:]
	for range n {
		_, l := binary.Uvarint(b)
		if l <= 0 {
			return nil, errors.New("bad tag")
		}
		b = b[l:]
		size, l := binary.Uvarint(b)
		if l <= 0 || uint64(len(b)-l) < size {
			return nil, errors.New("bad tag size")
		}
		b = b[l+int(size):]
	}
	return b, nil
}

// expectClosed requires the broker to close the connection within 10s. Bytes
// it sends first are tolerated (and logged); a connection still open is not.
func (rc *rawConn) expectClosed() {
	rc.t.Helper()
	rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 4096)
	var extra []byte
	for {
		n, err := rc.c.Read(buf)
		extra = append(extra, buf[:n]...)
		if err == nil {
			continue
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			rc.t.Errorf("broker kept the connection open for 10s (received %d bytes)", len(extra))
		} else if len(extra) > 0 {
			rc.t.Logf("broker sent %d bytes before closing: %x", len(extra), clip(extra))
		}
		return
	}
}

// header builds a v1 request header (no tagged fields) by hand, for keys and
// versions that kmsg cannot express.
func header(key, version int16, corr int32, clientID string) []byte {
	h := binary.BigEndian.AppendUint16(nil, uint16(key))
	h = binary.BigEndian.AppendUint16(h, uint16(version))
	h = binary.BigEndian.AppendUint32(h, uint32(corr))
	h = binary.BigEndian.AppendUint16(h, uint16(len(clientID)))
	return append(h, clientID...)
}

func frame(parts ...[]byte) []byte {
	body := bytes.Join(parts, nil)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// buildBatch encodes a valid uncompressed v2 record batch (magic 2, no
// producer id) holding values with null keys, all at timestamp ts.
func buildBatch(values [][]byte, ts int64) []byte {
	return buildProducerBatch(values, ts, -1, -1, -1)
}

// buildProducerBatch is buildBatch carrying an idempotent producer's id,
// epoch and the sequence number of its first record.
func buildProducerBatch(values [][]byte, ts int64, producerID int64, epoch int16, firstSeq int32) []byte {
	var recs []byte
	for i, v := range values {
		var r []byte
		r = append(r, 0)                          // attributes
		r = binary.AppendVarint(r, 0)             // timestamp delta
		r = binary.AppendVarint(r, int64(i))      // offset delta
		r = binary.AppendVarint(r, -1)            // null key
		r = binary.AppendVarint(r, int64(len(v))) // value
		r = append(r, v...)
		r = binary.AppendVarint(r, 0) // no headers
		recs = binary.AppendVarint(recs, int64(len(r)))
		recs = append(recs, r...)
	}
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      int32(len(values) - 1),
		FirstTimestamp:       ts,
		MaxTimestamp:         ts,
		ProducerID:           producerID,
		ProducerEpoch:        epoch,
		FirstSequence:        firstSeq,
		NumRecords:           int32(len(values)),
		Records:              recs,
	}
	raw := b.AppendTo(nil)
	// batchLength counts the bytes after itself; the CRC-32C covers
	// attributes (byte 21) to the end.
	binary.BigEndian.PutUint32(raw[8:12], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:21], crc32.Checksum(raw[21:], castagnoli))
	return raw
}

// produceRequest is a Produce request for one partition at the given version.
func produceRequest(version int16, acks int16, topic string, partition int32, batch []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(version)
	req.Acks = acks
	req.TimeoutMillis = 10000
	t := kmsg.NewProduceRequestTopic()
	t.Topic = topic
	p := kmsg.NewProduceRequestTopicPartition()
	p.Partition = partition
	p.Records = batch
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

// producePartitionResult extracts the single partition's result.
func producePartitionResult(t testing.TB, resp kmsg.Response) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	pr := resp.(*kmsg.ProduceResponse)
	if len(pr.Topics) != 1 || len(pr.Topics[0].Partitions) != 1 {
		t.Fatalf("produce response has %d topics, want 1 topic with 1 partition: %+v", len(pr.Topics), pr.Topics)
	}
	return pr.Topics[0].Partitions[0]
}
