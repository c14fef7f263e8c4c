package protocol

import (
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkRequestRoundTrip measures one small request and its response on
// one connection, one at a time, as an idle producer sends them: the
// reader's decode and dispatch, the hand-over to the writer and the write.
// Besides wall time per request it reports the process's CPU time per
// request (cpu-ns/op, from getrusage), which other load on the machine
// moves less.
func BenchmarkRequestRoundTrip(b *testing.B) {
	c := dial(b, testServer(b, DefaultConfig()))
	c.SetDeadline(time.Time{})
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench")).AppendRequest(nil, kmsg.NewPtrApiVersionsRequest(), 1)
	buf := make([]byte, 64<<10)
	var size [4]byte
	roundTrip := func() {
		if _, err := c.Write(frame); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, size[:]); err != nil {
			b.Fatal(err)
		}
		n := int(size[0])<<24 | int(size[1])<<16 | int(size[2])<<8 | int(size[3])
		if _, err := io.ReadFull(c, buf[:n]); err != nil {
			b.Fatal(err)
		}
	}
	roundTrip()
	cpu0 := processCPUTime()
	for b.Loop() {
		roundTrip()
	}
	b.ReportMetric(float64(processCPUTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

func processCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
