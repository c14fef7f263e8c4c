package partition

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/gokafka/gokafka/internal/testkit"
)

func TestValidateBatches(t *testing.T) {
	good := testkit.SimpleBatch(3, 100, 10)
	mod := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	recrc := func(b []byte) []byte {
		binary.BigEndian.PutUint32(b[offCRC:], batchCRC(b))
		return b
	}
	cases := []struct {
		name string
		in   []byte
		max  int32
		want error
	}{
		{"good", good, math32, nil},
		{"two", append(append([]byte(nil), good...), good...), math32, nil},
		{"empty", nil, math32, ErrInvalidRecord},
		{"trailing", append(append([]byte(nil), good...), 1, 2, 3), math32, ErrCorruptMessage},
		{"truncated", good[:len(good)-1], math32, ErrCorruptMessage},
		{"short length", mod(func(b []byte) []byte { binary.BigEndian.PutUint32(b[8:], 10); return b }), math32, ErrCorruptMessage},
		{"negative length", mod(func(b []byte) []byte { binary.BigEndian.PutUint32(b[8:], 0xfffffff0); return b }), math32, ErrCorruptMessage},
		{"magic 1", mod(func(b []byte) []byte { b[16] = 1; return b }), math32, ErrInvalidRecord},
		{"magic 3", mod(func(b []byte) []byte { b[16] = 3; return b }), math32, ErrCorruptMessage},
		{"crc", mod(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), math32, ErrCorruptMessage},
		{"too large", good, int32(len(good) - 1), ErrMessageTooLarge},
		{"count mismatch", mod(func(b []byte) []byte { binary.BigEndian.PutUint32(b[offNumRecords:], 2); return recrc(b) }), math32, ErrInvalidRecord},
		{"zero records", mod(func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[offNumRecords:], 0)
			binary.BigEndian.PutUint32(b[offLastOffsetDelta:], 0xffffffff)
			return recrc(b)
		}), math32, ErrInvalidRecord},
		{"codec 6", mod(func(b []byte) []byte { b[offAttributes+1] |= 6; return recrc(b) }), math32, ErrUnsupportedCompression},
		// Coordinators write these (markers, TxnOffsetCommit); only a
		// client's are refused, by CheckClientBatch.
		{"pid without sequence", mod(func(b []byte) []byte { binary.BigEndian.PutUint64(b[offProducerID:], 7); return recrc(b) }), math32, nil},
		{"base offset and epoch not covered by crc", mod(func(b []byte) []byte { setBaseOffsetAndEpoch(b, 99, 5); return b }), math32, nil},
	}
	for _, c := range cases {
		hs, err := ValidateBatches(c.in, c.max)
		if c.want == nil {
			if err != nil || len(hs) == 0 {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	if errs := []error{ErrUnsupportedMagic}; !errors.Is(func() error { _, err := ValidateBatches(cases[7].in, math32); return err }(), errs[0]) {
		t.Error("magic 1 should also be ErrUnsupportedMagic")
	}
	noSeq, _ := ParseBatchHeader(cases[len(cases)-2].in)
	if err := CheckClientBatch(noSeq); !errors.Is(err, ErrInvalidRecord) {
		t.Errorf("client batch with a producer id and no sequence: got %v, want invalid record", err)
	}
	h, err := ParseBatchHeader(good)
	if err != nil || h.NumRecords != 3 || h.LastOffset() != 2 || h.Size() != len(good) || h.Compression() != 0 || h.IsControl() || h.IsTransactional() || h.TimestampType() != 0 {
		t.Fatalf("%+v %v", h, err)
	}
	if _, err := ParseBatchHeader(good[:30]); !errors.Is(err, ErrCorruptMessage) {
		t.Fatal(err)
	}
}

// FuzzValidateBatches checks that no input panics ValidateBatches, that
// accepted input is whole batches that ParseBatchHeader agrees with, and
// that the lookup path (record walking, decompression) survives them too.
func FuzzValidateBatches(f *testing.F) {
	f.Add(testkit.SimpleBatch(3, 100, 10))
	f.Add(testkit.Batch{FirstTimestamp: 1, TimestampDeltas: []int64{0, 5}, ValueLen: 3, Codec: CompressionGzip}.Encode(f))
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 49, 0, 0, 0, 0, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		hs, err := ValidateBatches(b, 1<<20)
		if err != nil {
			return
		}
		pos := 0
		for _, h := range hs {
			h2, err := ParseBatchHeader(b[pos:])
			if err != nil || h2 != h {
				t.Fatalf("reparse: %v", err)
			}
			// Reading the records of an accepted batch never panics.
			if it, err := NewRecordIter(h, bytes.NewReader(b[pos+BatchHeaderSize:pos+h.Size()]), 1<<20, false); err == nil {
				for it.Next() {
				}
				it.Close()
			}
			pos += h.Size()
		}
		if pos != len(b) {
			t.Fatalf("accepted %d of %d bytes", pos, len(b))
		}
	})
}

// TestWriteFuzzSeeds regenerates the checked-in seed corpus when
// GOKAFKA_WRITE_SEEDS is set.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("GOKAFKA_WRITE_SEEDS") == "" {
		t.Skip("set GOKAFKA_WRITE_SEEDS=1 to rewrite testdata/fuzz seeds")
	}
	good := testkit.SimpleBatch(3, 100, 10)
	bad := append([]byte(nil), good...)
	bad[len(bad)-1] ^= 1
	seeds := map[string][]byte{
		"valid_uncompressed": good,
		"valid_zstd":         testkit.Batch{FirstTimestamp: 7, TimestampDeltas: []int64{0, 1, 2}, ValueLen: 5, Codec: CompressionZstd}.Encode(t),
		"valid_two_batches":  append(append([]byte(nil), good...), good...),
		"bad_crc":            bad,
		"torn":               good[:40],
		"magic1":             func() []byte { b := append([]byte(nil), good...); b[16] = 1; return b }(),
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzValidateBatches")
	os.MkdirAll(dir, 0o755)
	for name, b := range seeds {
		body := "go test fuzz v1\n[]byte(" + quoteBytes(b) + ")\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func quoteBytes(b []byte) string {
	const hex = "0123456789abcdef"
	out := []byte{'"'}
	for _, c := range b {
		out = append(out, '\\', 'x', hex[c>>4], hex[c&15])
	}
	return string(append(out, '"'))
}
