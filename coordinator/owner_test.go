package coordinator

import (
	"errors"
	"sync"
	"testing"

	"github.com/gokafka/gokafka/cluster"
)

type testPart struct{ Partition }

// testOwner records loads and unloads; loads finish at once, loaded.
type testOwner struct {
	mu       sync.Mutex
	wg       sync.WaitGroup
	own      *Owner[*testPart]
	loads    []int32
	unloaded []int32
}

func newTestOwner(load bool) *testOwner {
	o := &testOwner{}
	o.own = NewOwner("__state", 1, &o.mu, &o.wg, Hooks[*testPart]{
		New: func(p Partition) *testPart { return &testPart{p} },
		Load: func(p *testPart) {
			defer o.wg.Done()
			o.mu.Lock()
			defer o.mu.Unlock()
			o.loads = append(o.loads, p.ID)
			if load && o.own.CurrentLocked(p) {
				p.Loaded = true
			}
		},
		Unload: func(pid int32) {
			o.mu.Lock()
			defer o.mu.Unlock()
			if _, ok := o.own.DetachLocked(pid); ok {
				o.unloaded = append(o.unloaded, pid)
			}
		},
	})
	return o
}

func image(id byte, leaders ...[2]int32) *cluster.Image {
	t := &cluster.TopicInfo{Name: "__state", ID: cluster.TopicID{id}}
	for i, l := range leaders {
		t.Partitions = append(t.Partitions, cluster.PartitionInfo{Partition: int32(i), Leader: l[0], LeaderEpoch: l[1]})
	}
	return &cluster.Image{Topics: map[string]*cluster.TopicInfo{"__state": t}}
}

func TestOwnerLoadsLedPartitionsAndServesTheirKeys(t *testing.T) {
	o := newTestOwner(true)
	o.own.Reconcile(image(1, [2]int32{1, 5}, [2]int32{2, 5}))
	o.wg.Wait()
	if len(o.loads) != 1 || o.loads[0] != 0 {
		t.Fatalf("loads = %v, want [0]", o.loads)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	// "a" hashes to 97, partition 1 of 2; "b" to 98, partition 0.
	if _, err := o.own.ForKeyLocked("a"); !errors.Is(err, ErrNotCoordinator) {
		t.Fatalf("key of a partition led elsewhere: %v, want not owned", err)
	}
	if p, err := o.own.ForKeyLocked("b"); err != nil || p.ID != 0 {
		t.Fatalf("key of the led partition: %v %v", p, err)
	}
}

func TestOwnerAnswersLoadingUntilLoaded(t *testing.T) {
	o := newTestOwner(false)
	o.own.Reconcile(image(1, [2]int32{1, 5}))
	o.wg.Wait()
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, err := o.own.ForKeyLocked("k"); !errors.Is(err, ErrCoordinatorLoading) {
		t.Fatalf("err = %v, want loading", err)
	}
	if !o.own.LoadingLocked() {
		t.Fatal("LoadingLocked = false while a partition loads")
	}
}

func TestOwnerReloadsOnNewEpochOrRecreatedTopic(t *testing.T) {
	o := newTestOwner(true)
	o.own.Reconcile(image(1, [2]int32{1, 5}))
	o.own.Reconcile(image(1, [2]int32{1, 5})) // unchanged: nothing happens
	o.own.Reconcile(image(1, [2]int32{1, 6})) // new epoch: reload
	o.own.Reconcile(image(2, [2]int32{1, 6})) // recreated: reload
	o.own.Reconcile(image(2, [2]int32{2, 7})) // led elsewhere: unload
	o.wg.Wait()
	if len(o.loads) != 3 || len(o.unloaded) != 3 {
		t.Fatalf("loads %v unloads %v, want 3 of each", o.loads, o.unloaded)
	}
}

func TestOwnerCloseUnloadsAndAnswersClosed(t *testing.T) {
	o := newTestOwner(true)
	o.own.Reconcile(image(1, [2]int32{1, 5}))
	o.wg.Wait()
	stopped := 0
	if !o.own.Close(func() { stopped++ }) || o.own.Close(func() { stopped++ }) || stopped != 1 {
		t.Fatalf("Close ran its stop %d times, want once", stopped)
	}
	o.own.Reconcile(image(1, [2]int32{1, 6}))
	o.wg.Wait()
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.unloaded) != 1 || len(o.loads) != 1 {
		t.Fatalf("loads %v unloads %v after close", o.loads, o.unloaded)
	}
	if _, err := o.own.ForKeyLocked("k"); !errors.Is(err, ErrCoordinatorNotAvailable) {
		t.Fatalf("err = %v, want closed", err)
	}
}
