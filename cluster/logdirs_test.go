package cluster

import (
	"context"
	"reflect"
	"testing"
)

func TestOfflineLogDirMovesLeadershipAndISROfItsReplicasOnly(t *testing.T) {
	ctx := context.Background()
	dirA, dirB := [16]byte{1, 1, 1, 1, 1, 1, 1, 1, 1}, [16]byte{2, 2, 2, 2, 2, 2, 2, 2, 2}
	c := openQuorum(t, testConfig(), t.TempDir())
	var offline [][16]byte
	c.SetLogDirs([][16]byte{dirA, dirB}, func() [][16]byte { return offline })
	if err := c.Register(ctx, "127.0.0.1", 9092); err != nil {
		t.Fatal(err)
	}
	if got := c.Image().Brokers[1].LogDirs; !reflect.DeepEqual(got, []string{DirID(dirA), DirID(dirB)}) {
		t.Fatalf("registered log dirs %v", got)
	}
	addBroker(t, c, 2)
	addBroker(t, c, 3)
	mustCreate(t, c, TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1,
		Assignment: [][]int32{{1, 2, 3}, {1, 3, 2}, {2, 1, 3}}})
	before := c.Image().Topic("t").Partitions

	// Partitions 0 and 2 live in dirA on broker 1, partition 1 in dirB.
	if err := c.AssignReplicasToDirs(ctx, 1, dirA, map[string][]int32{"t": {0, 2}}); err != nil {
		t.Fatal(err)
	}
	if err := c.AssignReplicasToDirs(ctx, 1, dirB, map[string][]int32{"t": {1}}); err != nil {
		t.Fatal(err)
	}
	offline = [][16]byte{dirA}
	for range 2 { // the second heartbeat changes nothing more
		if fenced, _, err := c.Heartbeat(ctx, false); err != nil || fenced {
			t.Fatalf("heartbeat: fenced %v, %v", fenced, err)
		}
	}
	after := c.Image().Topic("t").Partitions
	p0, p1, p2 := after[0], after[1], after[2]
	if p0.Leader != 2 || !reflect.DeepEqual(p0.ISR, []int32{2, 3}) || p0.LeaderEpoch != before[0].LeaderEpoch+1 {
		t.Fatalf("partition 0 (led by 1 in the offline dir): %+v, want leader 2, ISR [2 3], a new leader epoch", p0)
	}
	if p2.Leader != 2 || !reflect.DeepEqual(p2.ISR, []int32{2, 3}) || p2.LeaderEpoch != before[2].LeaderEpoch {
		t.Fatalf("partition 2 (followed by 1 in the offline dir): %+v, want leader 2 kept, 1 out of the ISR", p2)
	}
	if p1.Leader != 1 || !reflect.DeepEqual(p1.ISR, []int32{1, 3, 2}) || p1.LeaderEpoch != before[1].LeaderEpoch {
		t.Fatalf("partition 1 (in the healthy dir): %+v, want unchanged leadership and ISR", p1)
	}
	im := c.Image()
	if b := im.Brokers[1]; b.Fenced || !reflect.DeepEqual(b.OfflineLogDirs, []string{DirID(dirA)}) {
		t.Fatalf("broker 1 after reporting dirA offline: %+v", b)
	}
	for i, want := range []bool{true, false, true} {
		if got := ReplicaOffline(im, &after[i], 1); got != want {
			t.Fatalf("partition %d: replica on broker 1 offline %v, want %v", i, got, want)
		}
		if ReplicaOffline(im, &after[i], 2) {
			t.Fatalf("partition %d: replica on broker 2 reported offline", i)
		}
	}
	// The same heartbeat again proposes nothing.
	off := c.Image().Offset
	if _, _, err := c.Heartbeat(ctx, false); err != nil {
		t.Fatal(err)
	}
	if c.Image().Offset != off {
		t.Fatal("a repeated offline-dir heartbeat changed the metadata")
	}
}
