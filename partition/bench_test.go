package partition

import (
	"math/rand"
	"testing"

	"github.com/gokafka/gokafka/internal/testkit"
)

// bench16K is a 16 KiB batch of 16 records of 1 KiB (minus framing).
func bench16K(b *testing.B) []byte {
	d := make([]int64, 16)
	return testkit.Batch{FirstTimestamp: 1_700_000_000_000, TimestampDeltas: d, ValueLen: 1000}.Encode(b)
}

func benchLog(b *testing.B) *Log {
	l, err := Open(OSFS(), b.TempDir(), TopicPartition{Topic: "bench", Partition: 0}, DefaultConfig(), testLogger(b), OpenOptions{CleanShutdown: true})
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// BenchmarkAppend: page-cache appends (no fsync per append: flush.messages
// at its default), the path acks=1 produce takes.
func BenchmarkAppend(b *testing.B) {
	l := benchLog(b)
	defer l.Close()
	batch := bench16K(b)
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := l.Append(batch, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendFlushEach: flush.messages=1 with 8 concurrent producers,
// showing group commit amortising fsyncs.
func BenchmarkAppendFlushEach(b *testing.B) {
	l := benchLog(b)
	defer l.Close()
	cfg := l.Config()
	cfg.FlushMessages = 1
	l.UpdateConfig(cfg)
	batch := bench16K(b)
	b.SetBytes(int64(len(batch)))
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		mine := append([]byte(nil), batch...)
		for pb.Next() {
			if _, err := l.Append(mine, 1); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkRead: random-offset fetches of up to 1 MiB from a 64 MiB log.
func BenchmarkRead(b *testing.B) { benchRead(b, false) }

// BenchmarkReadRegion is the fetch path's read: only batch headers are
// read; the bytes stay in the file for sendfile.
func BenchmarkReadRegion(b *testing.B) { benchRead(b, true) }

func benchRead(b *testing.B, region bool) {
	l := benchLog(b)
	defer l.Close()
	batch := bench16K(b)
	for i := 0; i < 4096; i++ {
		if _, err := l.Append(batch, 1); err != nil {
			b.Fatal(err)
		}
	}
	leo := l.LogEndOffset()
	l.SetHighWatermark(leo)
	rng := rand.New(rand.NewSource(1))
	b.ReportAllocs()
	b.ResetTimer()
	var n int64
	for i := 0; i < b.N; i++ {
		read := l.Read
		if region {
			read = l.ReadRegion
		}
		ri, err := read(rng.Int63n(leo), 1<<20, leo, true)
		if err != nil {
			b.Fatal(err)
		}
		if ri.Region != nil {
			ri.Region.Close()
		}
		n += ri.Size()
	}
	b.SetBytes(n / int64(b.N))
}

func BenchmarkValidateBatches(b *testing.B) {
	batch := bench16K(b)
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := ValidateBatches(batch, 1<<20); err != nil {
			b.Fatal(err)
		}
	}
}
