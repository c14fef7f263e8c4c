package replication

import (
	"slices"
	"sync/atomic"
)

// This file is the leader's ISR and high-watermark logic for one partition
// as a plain state machine, after Kafka's Partition.scala and Replica.scala.
// It does no I/O, starts no goroutines and never reads a clock: the caller
// feeds events (with the time as milliseconds) and carries out the Effects
// each one returns — storing the HW in the log, sending an AlterPartition,
// answering parked acks=all produces. That keeps every rule testable with a
// fake clock (isr_test.go).
//
// Rules, by the DESIGN section 2 numbering:
//   - HW = min LEO over the ISR and the leader, and it only moves up (5);
//     it stands still while the ISR is below min.insync.replicas (KIP-966).
//     While an AlterPartition is in flight the "maximal ISR" is used: the
//     committed ISR plus a replica being added, so a shrink or an
//     expansion that the controller has not yet accepted can never let the
//     HW pass a record some replica the controller may still count as in
//     sync lacks.
//   - A follower is caught up when its fetch offset reaches the leader's
//     LEO, or reaches the leader's LEO as of its previous fetch (then it was
//     caught up at that previous fetch). One that has not been caught up
//     for longer than replica.lag.time.max.ms leaves the ISR (3).
//   - A follower rejoins when its LEO >= HW and it has reached the start of
//     the current leader epoch (3).
//   - At most one AlterPartition is in flight. One whose outcome is
//     unknown stays pending and is sent again; only a definitive refusal
//     or newer metadata ends it (Partition.handleAlterPartitionError).
//   - An acks=all produce completes once HW > its last offset, with
//     NOT_ENOUGH_REPLICAS_AFTER_APPEND if the (maximal) ISR is then smaller
//     than min.insync.replicas (1, 4).

// LeaderAndISR is the partition record as the leader learns it from
// metadata.
type LeaderAndISR struct {
	LeaderEpoch    int32
	PartitionEpoch int32
	Replicas       []int32
	ISR            []int32
	// Ineligible lists replicas on fenced brokers: they may not join the ISR.
	Ineligible []int32
	MinISR     int
}

// ISRProposal is an AlterPartition the caller must send. Seq identifies it
// when its outcome is fed back with AlterPartitionDone.
type ISRProposal struct {
	Seq            uint64
	LeaderEpoch    int32
	PartitionEpoch int32
	NewISR         []int32
}

// WaiterDone is a parked acks=all produce to answer. Err is nil,
// ErrNotEnoughReplicasAfterAppend or ErrNotLeaderOrFollower.
type WaiterDone struct {
	ID  uint64
	Err error
}

// Effects is what an event asks the caller to do.
type Effects struct {
	// HWChanged reports that HW moved up; the caller stores it in the log
	// and wakes fetches parked on it.
	HWChanged bool
	HW        int64
	// Propose, if set, is an AlterPartition to send.
	Propose *ISRProposal
	// Done are acks=all waiters to answer.
	Done []WaiterDone
}

func (e *Effects) merge(o Effects) {
	if o.HWChanged {
		e.HWChanged, e.HW = true, o.HW
	}
	if o.Propose != nil {
		e.Propose = o.Propose
	}
	e.Done = append(e.Done, o.Done...)
}

// AlterPartitionOutcome classifies a failed AlterPartition the way Kafka's
// Partition.handleAlterPartitionError does.
type AlterPartitionOutcome int

const (
	// AlterOK: the controller accepted (or already had) the ISR.
	AlterOK AlterPartitionOutcome = iota
	// AlterWaitForMetadata: our leader or partition epoch is stale
	// (FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION, not leader, unknown
	// partition, INVALID_REQUEST). The proposal stays pending until newer
	// metadata replaces the partition state, so nothing else is proposed
	// from stale state.
	AlterWaitForMetadata
	// AlterRejected: the controller says the change was not and will
	// never be applied (INELIGIBLE_REPLICA, OPERATION_NOT_ATTEMPTED). Only
	// then is the committed state restored.
	AlterRejected
	// AlterRetry: the outcome is unknown (the call timed out, the
	// controller moved, NOT_CONTROLLER, a network error). The controller
	// may have committed the change, so the proposal stays pending — the
	// HW keeps counting the maximal ISR — and the same change is sent
	// again until a controller answers.
	AlterRetry
)

// followerState is Kafka's Replica.ReplicaState for one remote replica.
type followerState struct {
	// id is the follower's broker id.
	id int32
	// leo is the follower's log end offset, i.e. its last fetch offset;
	// -1 until it fetches under this leader epoch.
	leo int64
	// logStart is the follower's log start offset, -1 if unknown.
	logStart int64
	// lastFetchLeaderLEO is the leader's LEO when the previous fetch was
	// served, -1 if none.
	lastFetchLeaderLEO int64
	lastFetchMs        int64
	// lastCaughtUpMs is the last time the follower's LEO was known to
	// reach the leader's LEO.
	lastCaughtUpMs int64
	// rounds, when set, is the time of the latest fetch of the
	// follower's fetch session, which left this partition out because
	// nothing changed since the follower last fetched it at the leader's
	// LEO. Kafka reads every partition of a session on every fetch and
	// records each omitted one as fetched at the log end, caught up; here
	// those fetches are counted without visiting the partition: each one
	// is a fetch at leo, at the leader's unchanged LEO, at time rounds.
	// Settled (folded into lastCaughtUpMs and lastFetchMs) as soon as the
	// leader's LEO moves or the follower fetches the partition itself.
	rounds *atomic.Int64
}

// settleRounds folds the session fetches counted by rounds into the
// follower's state and stops counting them.
func (f *followerState) settleRounds() {
	if f.rounds == nil {
		return
	}
	ms := f.rounds.Load()
	f.lastCaughtUpMs = max(f.lastCaughtUpMs, ms)
	f.lastFetchMs = max(f.lastFetchMs, ms)
	f.rounds = nil
}

// caughtUp is Kafka's ReplicaState.isCaughtUp.
func (f *followerState) caughtUp(leaderLEO, nowMs, lagMaxMs int64) bool {
	lastCaughtUp := f.lastCaughtUpMs
	if f.rounds != nil {
		lastCaughtUp = max(lastCaughtUp, f.rounds.Load())
	}
	return f.leo == leaderLEO || nowMs-lastCaughtUp <= lagMaxMs
}

type waiter struct {
	id uint64
	// required is the HW that completes it: the produce's last offset + 1.
	required int64
}

// leaderState is the ISR/HW state of a partition this broker leads.
//
// Invariants: hw only increases; localID is in committed (the controller
// never removes the leader from the ISR); pending == nil or it differs from
// committed by exactly the replicas it adds or removes.
type leaderState struct {
	localID  int32
	lagMaxMs int64

	leaderEpoch    int32
	partitionEpoch int32
	// epochStartOffset is the leader's LEO when it became leader at
	// leaderEpoch: a follower below it has not yet seen this epoch.
	epochStartOffset int64
	replicas         []int32
	ineligible       []int32
	minISR           int

	// committed is the ISR the controller last confirmed.
	committed []int32
	// pending is the proposal in flight, nil if none.
	pending *ISRProposal
	// pendingExpand is true when pending adds a replica.
	pendingExpand bool
	seq           uint64

	leo int64
	hw  int64
	// followers has a state for each replica but this one, by value:
	// a few a partition, and thousands of partitions led.
	followers []followerState
	waiters   []waiter
}

// follower returns follower id's state, nil if id is not a replica. The
// pointer is good until the replica set changes (setReplicas).
func (s *leaderState) follower(id int32) *followerState {
	for i := range s.followers {
		if s.followers[i].id == id {
			return &s.followers[i]
		}
	}
	return nil
}

// newLeaderState starts leading at li with the log's current LEO and HW.
func newLeaderState(localID int32, lagMaxMs int64, li LeaderAndISR, leo, hw, nowMs int64) (*leaderState, Effects) {
	s := &leaderState{localID: localID, lagMaxMs: lagMaxMs, leaderEpoch: -1, leo: leo, hw: hw}
	eff := s.UpdateLeaderAndISR(li, nowMs)
	return s, eff
}

// maximalISR is the committed ISR plus a replica being added. A pending
// shrink does not count: until the controller accepts it the removed
// replicas may still be counted as in sync.
func (s *leaderState) maximalISR() []int32 {
	if s.pending != nil && s.pendingExpand {
		return s.pending.NewISR
	}
	return s.committed
}

// ISR returns the committed ISR.
func (s *leaderState) ISR() []int32 { return s.committed }

// EpochStart returns the LEO at which this leader's epoch started.
func (s *leaderState) EpochStart() int64 { return s.epochStartOffset }

// CanAppend decides whether a produce with acks may be appended: acks=all
// is refused with NOT_ENOUGH_REPLICAS while the committed ISR is smaller
// than min.insync.replicas (Kafka's Partition.appendRecordsToLeader, which
// does not cap min.insync.replicas at the replica count, unlike the HW
// rule of underMinISR).
func (s *leaderState) CanAppend(acks int16) error {
	if acks == -1 && len(s.committed) < s.minISR {
		return ErrNotEnoughReplicas
	}
	return nil
}

// HW returns the high watermark.
func (s *leaderState) HW() int64 { return s.hw }

// Inflight reports whether an AlterPartition is pending.
func (s *leaderState) Inflight() bool { return s.pending != nil }

// UpdateLeaderAndISR applies a partition record from metadata. A record at
// an older partition epoch than the one we hold is ignored (an AlterPartition
// response may have told us the newer one first). A new leader epoch resets
// the followers' fetch state as Kafka's Replica.resetReplicaState does: ISR
// members count as caught up now, others not at all, so the HW waits for
// every ISR member to fetch under the new epoch.
func (s *leaderState) UpdateLeaderAndISR(li LeaderAndISR, nowMs int64) Effects {
	newEpoch := li.LeaderEpoch > s.leaderEpoch
	switch {
	case li.LeaderEpoch < s.leaderEpoch:
		return Effects{}
	case !newEpoch && li.PartitionEpoch < s.partitionEpoch:
		// An AlterPartition response told us a newer record first; the
		// configs that came with this one are current all the same.
		s.minISR = li.MinISR
		return Effects{Done: s.releaseWaiters()}
	case !newEpoch && li.PartitionEpoch == s.partitionEpoch:
		// The record did not change (a config or broker change brought it
		// here, or our AlterPartition's answer came first): keep any
		// proposal in flight. The replica set is the record's, though:
		// an AlterPartition that completed a reassignment changed it, and
		// its answer does not carry it.
		s.ineligible = slices.Clone(li.Ineligible)
		s.minISR = li.MinISR
		if !slices.Equal(s.replicas, li.Replicas) {
			s.setReplicas(li.Replicas, false, nowMs)
		}
		return Effects{Done: s.releaseWaiters()}
	}
	s.ineligible = slices.Clone(li.Ineligible)
	s.committed = slices.Clone(li.ISR)
	s.minISR = li.MinISR
	s.pending, s.pendingExpand = nil, false
	s.partitionEpoch = li.PartitionEpoch
	s.setReplicas(li.Replicas, newEpoch, nowMs)
	if newEpoch {
		s.leaderEpoch = li.LeaderEpoch
		s.epochStartOffset = s.leo
	}
	return s.maybeAdvanceHW()
}

// setReplicas replaces the replica set, tracking a follower state for each
// replica but this one; a new leader epoch starts every follower afresh.
func (s *leaderState) setReplicas(replicas []int32, newEpoch bool, nowMs int64) {
	s.replicas = slices.Clone(replicas)
	followers := make([]followerState, 0, len(s.replicas))
	for _, id := range s.replicas {
		if id == s.localID || slices.ContainsFunc(followers, func(f followerState) bool { return f.id == id }) {
			continue
		}
		if old := s.follower(id); old != nil {
			followers = append(followers, *old)
		} else {
			followers = append(followers, followerState{id: id, leo: -1, logStart: -1, lastFetchLeaderLEO: -1})
		}
	}
	s.followers = followers
	for i := range s.followers {
		f := &s.followers[i]
		id := f.id
		if newEpoch {
			inSync := slices.Contains(s.committed, id)
			f.leo, f.logStart, f.lastFetchLeaderLEO, f.lastFetchMs, f.lastCaughtUpMs = -1, -1, -1, 0, 0
			f.rounds = nil
			if inSync {
				f.lastCaughtUpMs = nowMs
			}
		}
	}
}

// Appended records that the leader's log now ends at leo.
func (s *leaderState) Appended(leo int64) Effects {
	if leo > s.leo {
		s.leo = leo
		// The session fetches that left the partition out were caught
		// up at the old LEO; later ones are not until the follower
		// fetches the new records.
		for i := range s.followers {
			s.followers[i].settleRounds()
		}
	}
	return s.maybeAdvanceHW()
}

// FollowerFetched records a fetch from follower id at fetchOffset (its LEO)
// served when the leader's LEO was leaderLEO (read before the fetch, so that
// appends racing with the read do not deny the follower its catch-up).
// Unknown replicas are ignored; the caller refuses their fetches.
func (s *leaderState) FollowerFetched(id int32, fetchOffset, followerLogStart, leaderLEO, nowMs int64) Effects {
	f := s.follower(id)
	if f == nil {
		return Effects{}
	}
	f.settleRounds()
	switch {
	case fetchOffset >= leaderLEO:
		f.lastCaughtUpMs = max(f.lastCaughtUpMs, nowMs)
	case f.lastFetchLeaderLEO >= 0 && fetchOffset >= f.lastFetchLeaderLEO:
		f.lastCaughtUpMs = max(f.lastCaughtUpMs, f.lastFetchMs)
	}
	f.leo = fetchOffset
	f.logStart = followerLogStart
	f.lastFetchLeaderLEO = max(leaderLEO, f.lastFetchLeaderLEO)
	f.lastFetchMs = nowMs
	eff := s.maybeExpand(id, f)
	eff.merge(s.maybeAdvanceHW())
	return eff
}

// FollowerInSession records that follower id fetches this partition in a
// fetch session whose latest fetch time rounds holds, and that the
// session will leave the partition out of its fetches until the follower
// or the partition moves. Only a follower caught up to the leader's LEO
// is counted as fetching it on every round; otherwise the follower must
// keep fetching the partition itself. It reports whether the follower is
// settled: caught up and in the committed ISR, so that nothing needs it
// to fetch the partition again while the partition does not change.
func (s *leaderState) FollowerInSession(id int32, rounds *atomic.Int64) bool {
	f := s.follower(id)
	if f == nil {
		return false
	}
	if f.rounds != rounds {
		f.settleRounds()
	}
	if f.leo < s.leo || rounds == nil {
		return false
	}
	f.rounds = rounds
	return slices.Contains(s.committed, id) && s.pending == nil
}

// maybeExpand proposes adding id to the ISR when it has caught up to the HW
// and to the current leader epoch (Partition.isFollowerInSync).
func (s *leaderState) maybeExpand(id int32, f *followerState) Effects {
	if s.pending != nil || slices.Contains(s.committed, id) || slices.Contains(s.ineligible, id) {
		return Effects{}
	}
	if f.leo < s.hw || f.leo < s.epochStartOffset {
		return Effects{}
	}
	isr := append(slices.Clone(s.committed), id)
	return Effects{Propose: s.propose(isr, true)}
}

// Tick checks for followers that fell out of sync (Kafka's isr-expiration
// task, run every replica.lag.time.max.ms / 2).
func (s *leaderState) Tick(nowMs int64) Effects {
	if s.pending != nil {
		return Effects{}
	}
	var out []int32
	for _, id := range s.committed {
		if id == s.localID {
			continue
		}
		f := s.follower(id)
		if f == nil || !f.caughtUp(s.leo, nowMs, s.lagMaxMs) {
			out = append(out, id)
		}
	}
	if len(out) == 0 {
		return Effects{}
	}
	isr := make([]int32, 0, len(s.committed)-len(out))
	for _, id := range s.committed {
		if !slices.Contains(out, id) {
			isr = append(isr, id)
		}
	}
	return Effects{Propose: s.propose(isr, false)}
}

func (s *leaderState) propose(isr []int32, expand bool) *ISRProposal {
	s.seq++
	s.pending = &ISRProposal{Seq: s.seq, LeaderEpoch: s.leaderEpoch, PartitionEpoch: s.partitionEpoch, NewISR: isr}
	s.pendingExpand = expand
	p := *s.pending
	p.NewISR = slices.Clone(isr)
	return &p
}

// AlterPartitionDone feeds back the outcome of proposal seq. On AlterOK,
// result is the partition record the controller holds now.
func (s *leaderState) AlterPartitionDone(seq uint64, outcome AlterPartitionOutcome, result LeaderAndISR) Effects {
	if s.pending == nil || s.pending.Seq != seq {
		// Metadata replaced the state the proposal was made from.
		return Effects{}
	}
	switch outcome {
	case AlterOK:
		if result.LeaderEpoch != s.leaderEpoch || result.PartitionEpoch < s.partitionEpoch {
			return Effects{}
		}
		s.committed = slices.Clone(result.ISR)
		s.partitionEpoch = result.PartitionEpoch
		s.pending, s.pendingExpand = nil, false
		return s.maybeAdvanceHW()
	case AlterWaitForMetadata:
		return Effects{}
	case AlterRetry:
		// Kafka's Partition.handleAlterPartitionError: an unknown outcome
		// is never treated as a refusal. Forgetting an expansion here
		// would let the HW advance without the added replica although the
		// controller may count it in the ISR (and elect it).
		p := *s.pending
		p.NewISR = slices.Clone(p.NewISR)
		return Effects{Propose: &p}
	default:
		s.pending, s.pendingExpand = nil, false
		return s.maybeAdvanceHW()
	}
}

// AddWaiter parks an acks=all produce whose last offset is required-1.
func (s *leaderState) AddWaiter(id uint64, required int64) Effects {
	s.waiters = append(s.waiters, waiter{id: id, required: required})
	return Effects{Done: s.releaseWaiters()}
}

// RemoveWaiter drops a waiter (its produce timed out); false if it is not
// parked.
func (s *leaderState) RemoveWaiter(id uint64) bool {
	for i, w := range s.waiters {
		if w.id == id {
			s.waiters = slices.Delete(s.waiters, i, i+1)
			return true
		}
	}
	return false
}

// Resign ends leadership: every parked produce gets NOT_LEADER_OR_FOLLOWER.
func (s *leaderState) Resign() []WaiterDone {
	out := make([]WaiterDone, 0, len(s.waiters))
	for _, w := range s.waiters {
		out = append(out, WaiterDone{ID: w.id, Err: ErrNotLeaderOrFollower})
	}
	s.waiters = nil
	s.pending = nil
	return out
}

// highWatermark is rule 5: the minimum LEO over the leader and the maximal
// ISR. A follower that has not fetched under this epoch has LEO -1 and holds
// the HW where it is.
func (s *leaderState) highWatermark() int64 {
	hw := s.leo
	for _, id := range s.maximalISR() {
		if id == s.localID {
			continue
		}
		f := s.follower(id)
		if f == nil {
			return -1
		}
		hw = min(hw, f.leo)
	}
	return hw
}

// underMinISR is KIP-966's rule (Kafka 4.x): while the committed ISR is
// smaller than min.insync.replicas (capped at the replica count, Kafka's
// effective min ISR) the HW does not advance. Everything below it is then
// held by every replica that left the ISR meanwhile, which is what lets
// the controller elect such a replica (an eligible leader replica) if the
// last ISR member fails. Parked acks=all produces are answered
// NOT_ENOUGH_REPLICAS_AFTER_APPEND at once rather than left to time out.
func (s *leaderState) underMinISR() bool {
	return len(s.committed) < min(s.minISR, len(s.replicas))
}

func (s *leaderState) maybeAdvanceHW() Effects {
	var eff Effects
	if hw := s.highWatermark(); hw > s.hw && !s.underMinISR() {
		s.hw = hw
		eff.HWChanged, eff.HW = true, hw
	}
	eff.Done = s.releaseWaiters()
	return eff
}

// releaseWaiters completes the waiters the HW has passed (Kafka's
// checkEnoughReplicasReachOffset).
func (s *leaderState) releaseWaiters() []WaiterDone {
	var done []WaiterDone
	n := 0
	underMin := s.underMinISR()
	for _, w := range s.waiters {
		if s.hw >= w.required || underMin {
			var err error
			if underMin || len(s.maximalISR()) < s.minISR {
				err = ErrNotEnoughReplicasAfterAppend
			}
			done = append(done, WaiterDone{ID: w.id, Err: err})
			continue
		}
		s.waiters[n] = w
		n++
	}
	s.waiters = s.waiters[:n]
	return done
}
