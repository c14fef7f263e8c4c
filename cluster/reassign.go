package cluster

// Partition reassignment (KIP-455) and leader elections (KIP-460), as
// Kafka's KRaft controller does them.
//
// A reassignment names a partition's target replicas. The partition
// record then holds the union: Replicas is the target followed by the
// replicas being removed, AddingReplicas the target members that were not
// replicas before, RemovingReplicas the replicas not in the target
// (Kafka's PartitionRecord fields). Brokers act on the record as on any
// other: a broker newly named gets a log and fetches from the leader, and
// the leader adds it to the ISR through AlterPartition once it has caught
// up. When every target replica is in the ISR the controller completes
// the reassignment in the same change that made it so: Replicas becomes
// the target, the ISR loses the removed replicas, and the leadership moves
// to the first target replica in the ISR if the leader was being removed
// (the leader's AlterPartition is then answered NEW_LEADER_ELECTED, as
// Kafka does). A broker no longer named drops the partition and deletes
// its log (replication's reconcile). Everything lives in the partition
// record, so a new active controller carries on where the last one was.
//
// A reassignment arriving while another is in progress starts from the
// original replicas (Replicas without AddingReplicas) and keeps as
// replicas everything the partition has now, so no replica that may be in
// the ISR disappears before the new target is in it. Cancelling (a null
// replica list) reverts to the original replicas: the ones being added
// leave the replicas and the ISR, and the leadership moves if one of them
// led. Cancelling a partition with no reassignment answers
// NO_REASSIGNMENT_IN_PROGRESS; an empty list, a duplicate or an unknown
// broker INVALID_REPLICA_ASSIGNMENT; an unknown partition
// UNKNOWN_TOPIC_OR_PARTITION.
//
// ElectLeaders: PREFERRED makes the first replica the leader if it is live
// and in the ISR (PREFERRED_LEADER_NOT_AVAILABLE otherwise,
// ELECTION_NOT_NEEDED if it leads already); UNCLEAN elects a leader for a
// partition that has none, from the ISR, then the ELR (KIP-966), then the
// last known leader, then any live replica (ELECTION_NOT_NEEDED if it has
// a leader, ELIGIBLE_LEADERS_NOT_AVAILABLE if no replica is live). With
// no partitions named, every partition is tried and those that need no
// election are left out of the answer, as Kafka does.
//
// auto.leader.rebalance.enable: every leader.imbalance.check.interval.seconds
// the active controller counts, per broker, the partitions whose preferred
// replica it is and how many of them it does not lead; past
// leader.imbalance.per.broker.percentage it runs a preferred election for
// those whose preferred replica is live, in the ISR and not being
// reassigned away.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/internal/kafkaerr"
)

// Reassignment and election outcomes.
var (
	ErrNoReassignmentInProgress    = kafkaerr.New(kerr.NoReassignmentInProgress, "no reassignment in progress")
	ErrElectionNotNeeded           = kafkaerr.New(kerr.ElectionNotNeeded, "election not needed")
	ErrPreferredLeaderNotAvailable = kafkaerr.New(kerr.PreferredLeaderNotAvailable, "preferred leader not available")
	ErrEligibleLeadersNotAvailable = kafkaerr.New(kerr.EligibleLeadersNotAvailable, "eligible leaders not available")
	// ErrNewLeaderElected answers an AlterPartition whose ISR change
	// completed a reassignment that moved the leadership away.
	ErrNewLeaderElected = kafkaerr.New(kerr.NewLeaderElected, "a new leader was elected")
)

// Reassignment is one partition of an AlterPartitionReassignments.
type Reassignment struct {
	Topic     string
	Partition int32
	// Replicas is the target; nil cancels the reassignment in progress.
	Replicas []int32
}

// ReassignmentStatus is a reassignment in progress, as
// ListPartitionReassignments reports it.
type ReassignmentStatus struct {
	Topic            string
	Partition        int32
	Replicas         []int32
	AddingReplicas   []int32
	RemovingReplicas []int32
}

// ElectionType is ElectLeaders' election type.
type ElectionType int8

const (
	ElectPreferred ElectionType = 0
	ElectUnclean   ElectionType = 1
)

// ElectionResult is the outcome of one partition's election.
type ElectionResult struct {
	Topic     string
	Partition int32
	Err       error
}

// Reassignments lists the reassignments in progress, sorted by topic and
// partition; with filter set, only of the partitions it names (nil
// partitions: all of that topic). Unknown topics and partitions are left
// out, as Kafka does.
func (im *Image) Reassignments(filter map[string][]int32) []ReassignmentStatus {
	var out []ReassignmentStatus
	add := func(name string, p *PartitionInfo) {
		if p == nil || !p.Reassigning() {
			return
		}
		out = append(out, ReassignmentStatus{Topic: name, Partition: p.Partition, Replicas: p.Replicas,
			AddingReplicas: p.AddingReplicas, RemovingReplicas: p.RemovingReplicas})
	}
	for _, name := range im.TopicNames() {
		t := im.Topics[name]
		parts, named := filter[name]
		switch {
		case filter != nil && !named:
		case parts == nil:
			for i := range t.Partitions {
				add(name, &t.Partitions[i])
			}
		default:
			ps := slices.Clone(parts)
			slices.Sort(ps)
			for _, p := range slices.Compact(ps) {
				add(name, im.Partition(name, p))
			}
		}
	}
	return out
}

// minus returns the members of a not in b, in a's order.
func minus(a, b []int32) []int32 {
	var out []int32
	for _, x := range a {
		if !contains32(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// startReassignment computes p's record for a reassignment to target
// (validated), completing it at once if every target replica is in the
// ISR already. changed is false when the record would not change.
func startReassignment(im *Image, t *TopicInfo, p PartitionInfo, target []int32, pol policy) (PartitionInfo, bool) {
	original := minus(p.Replicas, p.AddingReplicas)
	removing := minus(p.Replicas, target)
	adding := minus(target, original)
	mid := p
	mid.Replicas = append(slices.Clone(target), removing...)
	mid.AddingReplicas, mid.RemovingReplicas = adding, removing
	if !mid.Reassigning() {
		// Same replicas (perhaps in another order): nothing to move.
		mid.AddingReplicas, mid.RemovingReplicas = nil, nil
		if slices.Equal(mid.Replicas, p.Replicas) && !p.Reassigning() {
			return p, false
		}
	}
	next := completeReassignment(im, t, mid, pol)
	next.PartitionEpoch = p.PartitionEpoch + 1
	return next, true
}

// completeReassignment returns p completed if every target replica is in
// its ISR, p otherwise (the partition epoch is the caller's to set). A
// completion that removes replicas bumps the leader epoch even when the
// leader stays, as Kafka's controller does, so that nothing a removed
// replica still believes about the partition is current.
func completeReassignment(im *Image, t *TopicInfo, p PartitionInfo, pol policy) PartitionInfo {
	target := p.TargetReplicas()
	for _, r := range target {
		if !contains32(p.ISR, r) {
			return p
		}
	}
	next := settleReplicas(im, t, p, target, pol, false)
	if next.LeaderEpoch == p.LeaderEpoch && len(minus(p.Replicas, target)) > 0 {
		next.LeaderEpoch++
	}
	return next
}

// settleReplicas gives p the replica list replicas and no reassignment,
// keeping the ISR, ELR and last known leader within it and electing a
// leader if the current one is left out.
func settleReplicas(im *Image, t *TopicInfo, p PartitionInfo, replicas []int32, pol policy, allowUnclean bool) PartitionInfo {
	mid := p
	mid.Replicas = slices.Clone(replicas)
	mid.AddingReplicas, mid.RemovingReplicas = nil, nil
	mid.ELR = orderLike(replicas, p.ELR)
	mid.LastKnownELR = orderLike(replicas, p.LastKnownELR)
	mid.ISR = orderLike(replicas, p.ISR)
	if len(mid.ELR) == 0 {
		mid.ELR = nil
	}
	if len(mid.LastKnownELR) == 0 {
		mid.LastKnownELR = nil
	}
	// A leader left out is no longer in the ISR, so changePartition
	// elects another.
	next, _ := changePartition(mid, partitionTarget{
		isr: mid.ISR, live: liveExcept(im, -1), minISR: effectiveMinISR(pol, t, mid), allowUnclean: allowUnclean,
	})
	return next
}

// revertReassignment computes the record for cancelling p's reassignment.
// If no original replica is in the ISR any more, reverting would leave
// the partition without a leader: as Kafka, it is refused unless unclean
// leader election is on for the topic, which then elects a live original
// replica.
func revertReassignment(im *Image, t *TopicInfo, p PartitionInfo, pol policy) (PartitionInfo, error) {
	original := minus(p.Replicas, p.AddingReplicas)
	unclean := false
	if len(orderLike(original, p.ISR)) == 0 {
		if !pol.unclean(t) {
			return p, fmt.Errorf("%w: cancelling would leave %s-%d with no in-sync replica, and unclean leader election is disabled", ErrInvalidReplicaAssignment, t.Name, p.Partition)
		}
		unclean = true
	}
	next := settleReplicas(im, t, p, original, pol, unclean)
	next.PartitionEpoch = p.PartitionEpoch + 1
	return next, nil
}

// checkTarget validates a reassignment's target replicas as Kafka does.
func checkTarget(im *Image, target []int32) error {
	if len(target) == 0 {
		return fmt.Errorf("%w: the manual partition assignment includes an empty replica list", ErrInvalidReplicaAssignment)
	}
	seen := map[int32]bool{}
	for _, r := range target {
		if seen[r] {
			return fmt.Errorf("%w: the manual partition assignment includes the broker %d more than once", ErrInvalidReplicaAssignment, r)
		}
		seen[r] = true
		if _, ok := im.Brokers[r]; !ok {
			return fmt.Errorf("%w: the manual partition assignment includes broker %d, but no such broker is registered", ErrInvalidReplicaAssignment, r)
		}
	}
	return nil
}

// AlterPartitionReassignments starts or cancels the reassignment of each
// partition, returning one error per request entry.
func (c *Controller) AlterPartitionReassignments(ctx context.Context, reqs []Reassignment) []error {
	if !c.IsLeader() {
		return c.forwardAlterReassignments(ctx, reqs)
	}
	if err := c.lockLeader(ctx); err != nil {
		return allErrs(len(reqs), err)
	}
	defer c.proposeMu.Unlock()
	errs := make([]error, len(reqs))
	for i, r := range reqs {
		// One entry per partition, each validated against the image the
		// previous one left, so that one refusal does not fail the rest.
		im := c.Image()
		t := im.Topics[r.Topic]
		p := im.Partition(r.Topic, r.Partition)
		if p == nil {
			errs[i] = fmt.Errorf("%w: %s-%d", ErrUnknownTopic, r.Topic, r.Partition)
			continue
		}
		pol := c.policyFor(im)
		var next PartitionInfo
		if r.Replicas == nil {
			if !p.Reassigning() {
				errs[i] = fmt.Errorf("%w: %s-%d", ErrNoReassignmentInProgress, r.Topic, r.Partition)
				continue
			}
			if next, errs[i] = revertReassignment(im, t, *p, pol); errs[i] != nil {
				continue
			}
		} else {
			if errs[i] = checkTarget(im, r.Replicas); errs[i] != nil {
				continue
			}
			var changed bool
			if next, changed = startReassignment(im, t, *p, r.Replicas, pol); !changed {
				continue
			}
		}
		errs[i] = c.log.Propose(ctx, &Command{Type: CmdChangePartitions, Changes: []PartitionChange{{
			Topic: r.Topic, ExpectPartitionEpoch: p.PartitionEpoch, Next: next,
		}}})
		if errs[i] == nil {
			c.logger.Info().Str("topic", r.Topic).Int32("partition", r.Partition).Bool("cancel", r.Replicas == nil).
				Ints32("replicas", next.Replicas).Ints32("adding", next.AddingReplicas).Ints32("removing", next.RemovingReplicas).
				Int32("leader", next.Leader).Msg("partition reassignment changed")
		}
	}
	return errs
}

// ElectLeaders runs an election of type typ for the named partitions
// (parts nil: every partition, answering only those an election was tried
// for).
func (c *Controller) ElectLeaders(ctx context.Context, typ ElectionType, parts map[string][]int32) ([]ElectionResult, error) {
	if typ != ElectPreferred && typ != ElectUnclean {
		return nil, fmt.Errorf("%w: unknown election type %d", ErrInvalidRequest, typ)
	}
	if !c.IsLeader() {
		return c.forwardElectLeaders(ctx, typ, parts)
	}
	if err := c.lockLeader(ctx); err != nil {
		return nil, err
	}
	defer c.proposeMu.Unlock()
	im := c.Image()
	pol := c.policyFor(im)
	all := parts == nil
	if all {
		parts = map[string][]int32{}
		for name, t := range im.Topics {
			for i := range t.Partitions {
				parts[name] = append(parts[name], int32(i))
			}
		}
	}
	names := make([]string, 0, len(parts))
	for n := range parts {
		names = append(names, n)
	}
	sort.Strings(names)
	var results []ElectionResult
	var changes []PartitionChange
	var changed []int
	for _, name := range names {
		ps := slices.Clone(parts[name])
		slices.Sort(ps)
		for _, pn := range slices.Compact(ps) {
			res := ElectionResult{Topic: name, Partition: pn}
			p := im.Partition(name, pn)
			if p == nil {
				res.Err = fmt.Errorf("%w: %s-%d", ErrUnknownTopic, name, pn)
				results = append(results, res)
				continue
			}
			next, err := electionChange(im, im.Topics[name], *p, typ, pol)
			if all && errors.Is(err, ErrElectionNotNeeded) {
				continue
			}
			res.Err = err
			if err == nil {
				changes = append(changes, PartitionChange{Topic: name, ExpectPartitionEpoch: p.PartitionEpoch, Next: next})
				changed = append(changed, len(results))
			}
			results = append(results, res)
		}
	}
	if len(changes) > 0 {
		if err := c.log.Propose(ctx, &Command{Type: CmdChangePartitions, Changes: changes}); err != nil {
			for _, i := range changed {
				results[i].Err = err
			}
			return results, nil
		}
		c.logger.Info().Int8("election_type", int8(typ)).Int("partitions", len(changes)).Msg("leaders elected")
	}
	return results, nil
}

// electionChange computes p's record after an election of type typ.
func electionChange(im *Image, t *TopicInfo, p PartitionInfo, typ ElectionType, pol policy) (PartitionInfo, error) {
	live := liveExcept(im, -1)
	switch typ {
	case ElectPreferred:
		if len(p.Replicas) == 0 {
			return p, ErrPreferredLeaderNotAvailable
		}
		pref := p.Replicas[0]
		if p.Leader == pref {
			return p, ErrElectionNotNeeded
		}
		if !contains32(p.ISR, pref) || !live(pref) {
			return p, fmt.Errorf("%w: broker %d is not live and in the ISR", ErrPreferredLeaderNotAvailable, pref)
		}
		next := p
		next.Leader = pref
		next.LeaderEpoch++
		next.PartitionEpoch++
		next.LastKnownELR = nil
		return next, nil
	default:
		if p.Leader >= 0 {
			return p, ErrElectionNotNeeded
		}
		next, changed := changePartition(p, partitionTarget{
			isr: p.ISR, live: live, minISR: effectiveMinISR(pol, t, p), allowUnclean: true,
		})
		if !changed || next.Leader < 0 {
			return p, ErrEligibleLeadersNotAvailable
		}
		return next, nil
	}
}

// imbalanceChanges returns the preferred elections the auto leader
// rebalance makes: for each broker whose share of the partitions it is
// preferred for but does not lead exceeds pct percent, those of them
// where it is live, in the ISR and not being reassigned.
func imbalanceChanges(im *Image, pct int) []PartitionChange {
	type count struct{ preferred, notLed int }
	counts := map[int32]*count{}
	for _, t := range im.Topics {
		for _, p := range t.Partitions {
			if len(p.Replicas) == 0 {
				continue
			}
			c := counts[p.Replicas[0]]
			if c == nil {
				c = &count{}
				counts[p.Replicas[0]] = c
			}
			c.preferred++
			if p.Leader != p.Replicas[0] {
				c.notLed++
			}
		}
	}
	live := liveExcept(im, -1)
	var out []PartitionChange
	for _, name := range im.TopicNames() {
		for _, p := range im.Topics[name].Partitions {
			if len(p.Replicas) == 0 || p.Leader == p.Replicas[0] || p.Reassigning() {
				continue
			}
			pref := p.Replicas[0]
			c := counts[pref]
			if c.notLed*100 <= pct*c.preferred || !live(pref) || !contains32(p.ISR, pref) {
				continue
			}
			next := p
			next.Leader = pref
			next.LeaderEpoch++
			next.PartitionEpoch++
			next.LastKnownELR = nil
			out = append(out, PartitionChange{Topic: name, ExpectPartitionEpoch: p.PartitionEpoch, Next: next})
		}
	}
	return out
}

// rebalanceLeaders runs the auto leader rebalance once, on the active
// controller.
func (c *Controller) rebalanceLeaders(ctx context.Context) error {
	if !c.IsLeader() {
		return nil
	}
	if err := c.lockLeader(ctx); err != nil {
		return err
	}
	defer c.proposeMu.Unlock()
	ch := imbalanceChanges(c.Image(), c.cfg.LeaderImbalancePerBrokerPercentage)
	if len(ch) == 0 {
		return nil
	}
	if err := c.log.Propose(ctx, &Command{Type: CmdChangePartitions, Changes: ch}); err != nil {
		return err
	}
	c.logger.Info().Int("partitions", len(ch)).Msg("leadership moved back to preferred replicas")
	return nil
}

// maybeRebalanceLeaders runs the auto leader rebalance if it is on and
// leader.imbalance.check.interval.seconds passed since the last run, or
// since this node became the active controller.
func (c *Controller) maybeRebalanceLeaders() {
	if !c.cfg.AutoLeaderRebalanceEnable || c.cfg.LeaderImbalanceCheckInterval <= 0 {
		return
	}
	if !c.IsLeader() {
		c.rebalanceMu.Lock()
		c.lastRebalance = time.Time{}
		c.rebalanceMu.Unlock()
		return
	}
	now := c.now()
	c.rebalanceMu.Lock()
	if c.lastRebalance.IsZero() {
		c.lastRebalance = now
	}
	due := now.Sub(c.lastRebalance) >= c.cfg.LeaderImbalanceCheckInterval
	if due {
		c.lastRebalance = now
	}
	c.rebalanceMu.Unlock()
	if !due {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.rebalanceLeaders(ctx); err != nil {
		c.logger.Warn().Err(err).Msg("leader rebalance failed")
	}
}

func (c *Controller) forwardAlterReassignments(ctx context.Context, reqs []Reassignment) []error {
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	idx := map[string]int{}
	for _, r := range reqs {
		i, ok := idx[r.Topic]
		if !ok {
			i = len(req.Topics)
			idx[r.Topic] = i
			t := kmsg.NewAlterPartitionAssignmentsRequestTopic()
			t.Topic = r.Topic
			req.Topics = append(req.Topics, t)
		}
		p := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		p.Partition, p.Replicas = r.Partition, r.Replicas
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, p)
	}
	resp, err := c.forward(ctx, req, func(r kmsg.Response) bool {
		return r.(*kmsg.AlterPartitionAssignmentsResponse).ErrorCode == kerr.NotController.Code
	})
	if errors.Is(err, errLocalLeader) {
		return c.AlterPartitionReassignments(ctx, reqs)
	}
	if err != nil {
		return allErrs(len(reqs), err)
	}
	r := resp.(*kmsg.AlterPartitionAssignmentsResponse)
	if err := codeErr(r.ErrorCode, r.ErrorMessage); err != nil {
		return allErrs(len(reqs), err)
	}
	type key struct {
		t string
		p int32
	}
	got := map[key]error{}
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			got[key{t.Topic, p.Partition}] = codeErr(p.ErrorCode, p.ErrorMessage)
		}
	}
	errs := make([]error, len(reqs))
	for i, rq := range reqs {
		e, ok := got[key{rq.Topic, rq.Partition}]
		if !ok {
			e = fmt.Errorf("controller did not answer for %s-%d", rq.Topic, rq.Partition)
		}
		errs[i] = e
	}
	return errs
}

func (c *Controller) forwardElectLeaders(ctx context.Context, typ ElectionType, parts map[string][]int32) ([]ElectionResult, error) {
	req := kmsg.NewPtrElectLeadersRequest()
	req.SetVersion(2)
	req.ElectionType = int8(typ)
	req.TimeoutMillis = 30000
	if parts != nil {
		req.Topics = []kmsg.ElectLeadersRequestTopic{}
		for name, ps := range parts {
			t := kmsg.NewElectLeadersRequestTopic()
			t.Topic, t.Partitions = name, ps
			req.Topics = append(req.Topics, t)
		}
	}
	resp, err := c.forward(ctx, req, func(r kmsg.Response) bool {
		return r.(*kmsg.ElectLeadersResponse).ErrorCode == kerr.NotController.Code
	})
	if errors.Is(err, errLocalLeader) {
		return c.ElectLeaders(ctx, typ, parts)
	}
	if err != nil {
		return nil, err
	}
	r := resp.(*kmsg.ElectLeadersResponse)
	if err := codeErr(r.ErrorCode, nil); err != nil {
		return nil, err
	}
	var out []ElectionResult
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			out = append(out, ElectionResult{Topic: t.Topic, Partition: p.Partition, Err: codeErr(p.ErrorCode, p.ErrorMessage)})
		}
	}
	return out, nil
}
