package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Online migration between the classic and the consumer group protocol
// (KIP-848's upgrade path): kgo members of one group are rolled one by one
// from one protocol to the other while records keep coming, and every
// record is read, none twice unless its commit failed.

// migrationReads is what the members of a migration test read: how often
// each value was read, and the values read in a poll whose commit failed
// (those may be read again by the next owner of their partition).
type migrationReads struct {
	mu          sync.Mutex
	seen        map[string]int
	uncommitted map[string]bool
}

// migrationMember is a kgo member, classic or consumer-protocol, that
// commits what each poll returned before letting a rebalance proceed.
type migrationMember struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
}

func startMigrationMember(t *testing.T, c *cluster, group, topic string, consumerProtocol bool, r *migrationReads) *migrationMember {
	t.Helper()
	opts := []kgo.Opt{
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500 * time.Millisecond),
	}
	if consumerProtocol {
		opts = append(opts, kgo.ServerSideBalancer())
	}
	cl := c.client(t, opts...)
	ctx, cancel := context.WithCancel(context.Background())
	m := &migrationMember{cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			fs := cl.PollRecords(ctx, 100)
			var vals []string
			fs.EachRecord(func(rec *kgo.Record) { vals = append(vals, string(rec.Value)) })
			err := cl.CommitUncommittedOffsets(context.Background())
			r.mu.Lock()
			for _, v := range vals {
				r.seen[v]++
				if err != nil {
					r.uncommitted[v] = true
				}
			}
			r.mu.Unlock()
			if err != nil {
				t.Logf("commit: %v", err)
			}
			cl.AllowRebalance()
		}
	}()
	return m
}

// stop leaves the group; everything read was committed in the loop.
func (m *migrationMember) stop() {
	m.cancel()
	<-m.done
	m.cl.Close()
}

// migrationSetting is a three-node cluster with a topic, a producer and
// the reads of a group's members.
type migrationSetting struct {
	*group848
	reads    *migrationReads
	produced int
}

func newMigrationSetting(t *testing.T, topic string) *migrationSetting {
	return &migrationSetting{
		group848: newGroup848(t, topic, 6, 0),
		reads:    &migrationReads{seen: map[string]int{}, uncommitted: map[string]bool{}},
	}
}

// produceAndRead produces n more records and waits until the group has
// read everything produced so far.
func (s *migrationSetting) produceAndRead(n int) {
	s.t.Helper()
	s.produce(s.produced, s.produced+n)
	s.produced += n
	eventually(s.t, 90*time.Second, func() error {
		s.reads.mu.Lock()
		defer s.reads.mu.Unlock()
		if len(s.reads.seen) < s.produced {
			return fmt.Errorf("read %d of %d distinct records", len(s.reads.seen), s.produced)
		}
		return nil
	})
}

// checkReads checks that every record was read, and read twice only if a
// commit of it failed.
func (s *migrationSetting) checkReads() {
	s.t.Helper()
	s.reads.mu.Lock()
	defer s.reads.mu.Unlock()
	dups := 0
	for i := range s.produced {
		v := fmt.Sprintf("v%05d", i)
		switch n := s.reads.seen[v]; {
		case n == 0:
			s.t.Errorf("record %s lost", v)
		case n > 1 && !s.reads.uncommitted[v]:
			s.t.Errorf("record %s read %d times although its commit succeeded", v, n)
		case n > 1:
			dups++
		}
	}
	s.t.Logf("%d records, %d read again after a failed commit", s.produced, dups)
}

// describeClassic is DescribeGroups (v5: the classic view) of group.
func describeClassic(ctx context.Context, cl *kgo.Client, group string) (kmsg.DescribeGroupsResponseGroup, error) {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Version = 5
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return kmsg.DescribeGroupsResponseGroup{}, err
	}
	g := resp.Groups[0]
	return g, kerr.ErrorForCode(g.ErrorCode)
}

// A group consumed by classic kgo members is upgraded online by rolling
// them one by one to the consumer protocol: the first consumer-protocol
// member converts the group, the remaining classic members keep consuming
// inside it, and in the end it is a consumer group of consumer-protocol
// members; no record is lost, none read twice unless its commit failed.
func TestClassicGroupUpgradedOnlineByRollingMembers(t *testing.T) {
	const topic, group = "roll-up", "roll-up-group"
	s := newMigrationSetting(t, topic)
	adm := s.c.client(t)
	var members []*migrationMember
	for range 3 {
		members = append(members, startMigrationMember(t, s.c, group, topic, false, s.reads))
	}
	eventually(t, 60*time.Second, func() error {
		g, err := describeClassic(s.ctx, adm, group)
		if err != nil {
			return err
		}
		if g.State != "Stable" || len(g.Members) != 3 {
			return fmt.Errorf("classic group %s with %d members", g.State, len(g.Members))
		}
		return nil
	})
	s.produceAndRead(300)

	for i := range members {
		members[i].stop()
		members[i] = startMigrationMember(t, s.c, group, topic, true, s.reads)
		s.produceAndRead(300)
		if i == 0 {
			if _, err := describe848(s.ctx, adm, group); err != nil {
				t.Fatalf("after the first consumer-protocol member joined: %v, want a consumer group", err)
			}
			// The classic members carry on inside it, sharing the
			// partitions with the new member.
			eventually(t, 60*time.Second, func() error {
				g, err := describe848(s.ctx, adm, group)
				if err != nil {
					return err
				}
				if err := stableWith(g, 3, 6); err != nil {
					return err
				}
				types := map[int8]int{}
				for _, m := range g.Members {
					types[m.MemberType]++
				}
				if types[0] != 2 || types[1] != 1 {
					return fmt.Errorf("member types %v, want two classic (0) and one consumer (1)", types)
				}
				return nil
			})
		}
	}
	waitStable848(t, 60*time.Second, s.ctx, adm, group, 3, 6)
	s.produceAndRead(300)
	for _, m := range members {
		m.stop()
	}
	s.checkReads()
}

// The other way: a consumer group of consumer-protocol kgo members rolled
// one by one to the classic protocol. Classic members join the consumer
// group; when the last consumer-protocol member leaves it becomes a
// classic group again and rebalances among the classic members.
func TestConsumerGroupDowngradedOnlineByRollingMembers(t *testing.T) {
	const topic, group = "roll-down", "roll-down-group"
	s := newMigrationSetting(t, topic)
	adm := s.c.client(t)
	var members []*migrationMember
	for range 3 {
		members = append(members, startMigrationMember(t, s.c, group, topic, true, s.reads))
	}
	waitStable848(t, 60*time.Second, s.ctx, adm, group, 3, 6)
	s.produceAndRead(300)

	for i := range members {
		members[i].stop()
		members[i] = startMigrationMember(t, s.c, group, topic, false, s.reads)
		if i == 0 {
			// The classic member joined the consumer group.
			waitStable848(t, 60*time.Second, s.ctx, adm, group, 3, 6)
		}
		s.produceAndRead(300)
	}
	eventually(t, 60*time.Second, func() error {
		if _, err := describe848(s.ctx, adm, group); err == nil {
			return fmt.Errorf("still a consumer group")
		}
		g, err := describeClassic(s.ctx, adm, group)
		if err != nil {
			return err
		}
		if g.State != "Stable" || len(g.Members) != 3 || g.ProtocolType != "consumer" {
			return fmt.Errorf("classic group %s (%s) with %d members", g.State, g.ProtocolType, len(g.Members))
		}
		return nil
	})
	s.produceAndRead(300)
	for _, m := range members {
		m.stop()
	}
	s.checkReads()
}

// A group in the middle of a migration (two classic kgo members inside a
// consumer group with one consumer-protocol member) loses its coordinator
// to SIGKILL: the new coordinator loads the classic members as classic
// members, with their ids and epochs, and consumption goes on.
func TestMigratingGroupSurvivesCoordinatorKill(t *testing.T) {
	const topic, group = "roll-kill", "roll-kill-group"
	s := newMigrationSetting(t, topic)
	probe := s.c.client(t)
	a := startMigrationMember(t, s.c, group, topic, false, s.reads)
	b := startMigrationMember(t, s.c, group, topic, false, s.reads)
	eventually(t, 60*time.Second, func() error {
		g, err := describeClassic(s.ctx, probe, group)
		if err != nil {
			return err
		}
		if g.State != "Stable" || len(g.Members) != 2 {
			return fmt.Errorf("classic group %s with %d members", g.State, len(g.Members))
		}
		return nil
	})
	x := startMigrationMember(t, s.c, group, topic, true, s.reads)
	before := waitStable848(t, 60*time.Second, s.ctx, probe, group, 3, 6)
	s.produceAndRead(300)

	adm := s.c.admin(t)
	r := adm.FindGroupCoordinators(s.ctx, group)[group]
	if r.Err != nil {
		t.Fatalf("FindGroupCoordinators: %v", r.Err)
	}
	t.Logf("killing coordinator %d at group epoch %d", r.NodeID, before.Epoch)
	s.c.node(r.NodeID).Kill()
	s.produceAndRead(300)

	probe2 := s.c.client(t)
	eventually(t, 90*time.Second, func() error {
		g, err := describe848(s.ctx, probe2, group)
		if err != nil {
			return err
		}
		if err := stableWith(g, 3, 6); err != nil {
			return err
		}
		types := map[string]int8{}
		for _, m := range g.Members {
			types[m.MemberID] = m.MemberType
		}
		for _, m := range before.Members {
			if typ, ok := types[m.MemberID]; !ok || typ != m.MemberType {
				return fmt.Errorf("member %s (type %d) not found as before: %v", m.MemberID, m.MemberType, types)
			}
		}
		return nil
	})
	s.produceAndRead(300)
	for _, m := range []*migrationMember{a, b, x} {
		m.stop()
	}
	s.checkReads()
}
