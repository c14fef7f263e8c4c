package coordinator

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"
)

// lagLog is a Replicas whose high watermark lags its log end until the
// test moves it, signalling the move as replication does.
type lagLog struct {
	mu    sync.Mutex
	hw    int64
	leo   int64
	moved chan struct{}
}

func (l *lagLog) Append(context.Context, TopicPartition, []byte, time.Duration) error { return nil }
func (l *lagLog) Bounds(TopicPartition) (int64, int64, int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return 0, l.hw, l.leo, nil
}
func (l *lagLog) Read(TopicPartition, int64, int64, int32) ([]byte, error) { return []byte{1}, nil }
func (l *lagLog) HWMoved(TopicPartition) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.moved
}
func (l *lagLog) setHW(hw int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.hw = hw
	close(l.moved)
	l.moved = make(chan struct{})
}

// A load waiting for a new leader's high watermark to reach the log end
// is woken by the high watermark's move, not by a poll: no time passes
// between the move and the load going on.
func TestReadPartitionLogWakesOnHighWatermarkMove(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &lagLog{hw: 0, leo: 2, moved: make(chan struct{})}
		done := make(chan bool, 1)
		var parsed []int64
		go func() {
			pos := int64(0)
			done <- ReadPartitionLog(l, TopicPartition{Topic: "__consumer_offsets"}, 1<<20, nil, zerolog.Nop(), func([]byte) (int64, error) {
				pos++
				parsed = append(parsed, pos)
				return pos, nil
			})
		}()
		synctest.Wait()
		start := time.Now()
		l.setHW(1)
		synctest.Wait()
		l.setHW(2)
		synctest.Wait()
		select {
		case ok := <-done:
			if !ok || len(parsed) != 2 {
				t.Fatalf("load returned %v after parsing %v", ok, parsed)
			}
		default:
			t.Fatal("the load did not go on when the high watermark moved")
		}
		if waited := time.Since(start); waited != 0 {
			t.Fatalf("the load waited %v of (fake) time: it polled", waited)
		}
	})
}
