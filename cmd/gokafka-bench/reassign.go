package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Replica sets of s10, as Kafka's usual case on 4 brokers: the moved
// partition goes from [1,2,3] to [2,3,4], so broker 4 copies the whole
// log from the leader, broker 1. The load topic's partition has broker 1
// as leader and broker 4 as a follower, so its acks=all records wait on
// both ends of the copy.
var (
	s10From = []int32{1, 2, 3}
	s10To   = []int32{2, 3, 4}
	s10Load = []int32{1, 2, 4}
)

// reassign measures a partition reassignment under load (s10): a
// partition filled with -s10-bytes is moved from s10From to s10To by
// AlterPartitionReassignments while one producer sends -s10-rate acks=all
// records a second to another topic. It reports the time from the request
// to the reassignment's end (ListPartitionReassignments empty, the
// replicas s10To, all of them in the ISR) and the producer's ack latency
// in the -s10-before window ahead of the request and during the move.
// sc.throttled sets leader.replication.throttled.rate and
// follower.replication.throttled.rate to -s10-throttle on every broker, and
// the topic's *.replication.throttled.replicas as kafka-reassign-partitions
// does (leader: the current replicas; follower: the added ones).
func (r *runner) reassign(ctx context.Context, sc scenario, srv *server) ([]metric, error) {
	o := r.opts
	c := r.scenarioLoad(sc, srv.addrs)
	moveTopic, loadTopic := c.topic+"-moved", c.topic+"-load"
	ctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()

	cl, err := newClient(srv.addrs)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for _, t := range []struct {
		name     string
		replicas []int32
	}{{moveTopic, s10From}, {loadTopic, s10Load}} {
		if err := createAssigned(ctx, cl, t.name, t.replicas); err != nil {
			return nil, err
		}
	}

	// The fill is not measured: acks=1 as fast as one client goes, then
	// the followers catch up before anything else starts.
	fill := *c
	fill.topic = moveTopic
	fill.acks = "1"
	fill.producers = 1
	fill.duration = time.Hour
	fill.totalBytes = o.s10Bytes
	fmt.Fprintf(r.log, " filling %.0f MB;", float64(o.s10Bytes)/MB)
	if _, err := runProduce(ctx, &fill); err != nil {
		return nil, fmt.Errorf("filling %s: %w", moveTopic, err)
	}
	if err := waitCaughtUp(ctx, cl, moveTopic, s10From); err != nil {
		return nil, err
	}

	if sc.throttled {
		if err := setThrottle(ctx, adm, moveTopic, o.s10Throttle, srv.addrs); err != nil {
			return nil, err
		}
	}

	// The producer: paced every millisecond at -s10-rate; each record's
	// latency goes to the window it was sent in.
	const (
		phaseWarm = iota
		phaseBefore
		phaseDuring
		phaseAfter
	)
	var phase atomic.Int32
	var hist [phaseAfter + 1]syncHistogram
	var sentIn, errIn [phaseAfter + 1]atomic.Int64
	var firstErr atomic.Pointer[error]
	pc, err := newClient(srv.addrs,
		kgo.DefaultProduceTopic(loadTopic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DisableIdempotentWrite(),
		kgo.ProducerLinger(0),
		kgo.RecordDeliveryTimeout(time.Minute),
	)
	if err != nil {
		return nil, err
	}
	defer pc.Close()
	vals := values(c.recordSize, c.batchMaxBytes)
	stop := make(chan struct{})
	var prod sync.WaitGroup
	prod.Go(func() {
		start := time.Now()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		var n int64
		for {
			due := int64(time.Since(start).Seconds() * float64(o.s10Rate))
			for ; n < due; n++ {
				p := phase.Load()
				sent := time.Now()
				sentIn[p].Add(1)
				pc.Produce(ctx, &kgo.Record{Value: vals[n%int64(len(vals))]}, func(_ *kgo.Record, err error) {
					if err != nil {
						if errIn[p].Add(1) == 1 {
							firstErr.Store(&err)
						}
						return
					}
					hist[p].record(time.Since(sent))
				})
			}
			select {
			case <-tick.C:
			case <-stop:
				return
			case <-ctx.Done():
				return
			}
		}
	})
	stopProducer := func() {
		close(stop)
		prod.Wait()
		fctx, fcancel := context.WithTimeout(ctx, time.Minute)
		_ = pc.Flush(fctx)
		fcancel()
	}
	sleep := func(d time.Duration) error {
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := sleep(time.Second); err != nil {
		stopProducer()
		return nil, err
	}
	phase.Store(phaseBefore)
	if err := sleep(o.s10Before); err != nil {
		stopProducer()
		return nil, err
	}

	cpu0, err := srv.cpu()
	if err != nil {
		stopProducer()
		return nil, err
	}
	phase.Store(phaseDuring)
	t0 := time.Now()
	areq := kadm.AlterPartitionAssignmentsReq{}
	areq.Assign(moveTopic, 0, s10To)
	aresp, err := adm.AlterPartitionAssignments(ctx, areq)
	if err == nil {
		err = aresp.Error()
	}
	if err != nil {
		stopProducer()
		return nil, fmt.Errorf("AlterPartitionReassignments %s-0 %v → %v: %w", moveTopic, s10From, s10To, err)
	}
	var took time.Duration
	for {
		done, err := reassignmentDone(ctx, adm, cl, moveTopic, s10To)
		if done {
			took = time.Since(t0)
			break
		}
		if ctx.Err() != nil {
			stopProducer()
			return nil, fmt.Errorf("reassignment of %s-0 not done after %v: %v", moveTopic, time.Since(t0).Round(time.Second), err)
		}
		if err := srv.checkAlive(); err != nil {
			stopProducer()
			return nil, err
		}
		time.Sleep(50 * time.Millisecond)
	}
	phase.Store(phaseAfter)
	cpu1, err := srv.cpu()
	stopProducer()
	if err != nil {
		return nil, err
	}
	if err := srv.checkAlive(); err != nil {
		return nil, err
	}
	if p := firstErr.Load(); p != nil {
		fmt.Fprintf(r.log, " first produce error: %v;", *p)
	}

	before, during := hist[phaseBefore].snapshot(), hist[phaseDuring].snapshot()
	res := &result{}
	res.add("reassignment: request to done", "s", took.Seconds(), false)
	res.add("copy rate (moved bytes / time)", "MB/s", float64(o.s10Bytes)/MB/took.Seconds(), true)
	res.add("record ack p50 before", "ms", ms(before.quantile(0.50)), false)
	res.add("record ack p99 before", "ms", ms(before.quantile(0.99)), false)
	res.add("record ack p50 during", "ms", ms(during.quantile(0.50)), false)
	res.add("record ack p99 during", "ms", ms(during.quantile(0.99)), false)
	res.add("record ack max during", "ms", ms(during.quantile(1)), false)
	res.add("records sent during", "rec", float64(sentIn[phaseDuring].Load()), true)
	res.add("produce errors (before, during)", "count", float64(errIn[phaseBefore].Load()+errIn[phaseDuring].Load()), false)
	res.add("server CPU during (all nodes)", "s", (cpu1 - cpu0).Seconds(), false)
	return res.Metrics, nil
}

// createAssigned creates a one-partition topic on the given replicas (the
// first is the preferred leader) and waits for them all in its ISR.
func createAssigned(ctx context.Context, cl *kgo.Client, topic string, replicas []int32) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic = topic
	rt.NumPartitions, rt.ReplicationFactor = -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, replicas
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("creating %s: %w", topic, err)
	}
	if len(resp.Topics) != 1 {
		return fmt.Errorf("creating %s: %d topics in the answer", topic, len(resp.Topics))
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		return fmt.Errorf("creating %s on %v: %w", topic, replicas, err)
	}
	return waitCaughtUp(ctx, cl, topic, replicas)
}

// waitCaughtUp waits until partition 0 of topic has exactly replicas, all
// of them in its ISR.
func waitCaughtUp(ctx context.Context, cl *kgo.Client, topic string, replicas []int32) error {
	for {
		p, err := partitionZero(ctx, cl, topic)
		if err == nil && sameSet(p.Replicas, replicas) && containsAll(p.ISR, replicas) {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s-0 not in sync on %v: %v (%+v)", topic, replicas, err, p)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// reassignmentDone reports whether no reassignment of topic-0 is listed
// any more and its replicas are want, all in the ISR.
func reassignmentDone(ctx context.Context, adm *kadm.Client, cl *kgo.Client, topic string, want []int32) (bool, error) {
	s := kadm.TopicsSet{}
	s.Add(topic, 0)
	listed, err := adm.ListPartitionReassignments(ctx, s)
	if err != nil {
		return false, err
	}
	if len(listed.Sorted()) > 0 {
		return false, nil
	}
	p, err := partitionZero(ctx, cl, topic)
	if err != nil {
		return false, err
	}
	return sameSet(p.Replicas, want) && containsAll(p.ISR, want), nil
}

// partitionZero is partition 0 of topic in a Metadata answer asked for
// directly (kadm could answer from the client's cache).
func partitionZero(ctx context.Context, cl *kgo.Client, topic string) (kmsg.MetadataResponseTopicPartition, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return kmsg.MetadataResponseTopicPartition{}, err
	}
	if len(resp.Topics) != 1 {
		return kmsg.MetadataResponseTopicPartition{}, fmt.Errorf("metadata lists %d topics", len(resp.Topics))
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		return kmsg.MetadataResponseTopicPartition{}, err
	}
	for _, p := range resp.Topics[0].Partitions {
		if p.Partition == 0 {
			return p, kerr.ErrorForCode(p.ErrorCode)
		}
	}
	return kmsg.MetadataResponseTopicPartition{}, fmt.Errorf("%s has no partition 0", topic)
}

func sameSet(a, b []int32) bool {
	return len(a) == len(b) && containsAll(a, b)
}

func containsAll(have, want []int32) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// setThrottle sets the replication throttle of a reassignment of topic-0
// from s10From to s10To as kafka-reassign-partitions --throttle does: the
// rate on every broker, leader-side for the current replicas and
// follower-side for the added ones.
func setThrottle(ctx context.Context, adm *kadm.Client, topic string, rate int64, addrs []string) error {
	rateStr := strconv.FormatInt(rate, 10)
	var brokers []int32
	for i := range addrs {
		brokers = append(brokers, int32(i+1))
	}
	var leader, follower []string
	for _, b := range s10From {
		leader = append(leader, fmt.Sprintf("0:%d", b))
	}
	for _, b := range s10To {
		if !slices.Contains(s10From, b) {
			follower = append(follower, fmt.Sprintf("0:%d", b))
		}
	}
	resp, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
		{Name: "leader.replication.throttled.rate", Value: &rateStr},
		{Name: "follower.replication.throttled.rate", Value: &rateStr},
	}, brokers...)
	if err != nil {
		return fmt.Errorf("setting the replication throttle rate: %w", err)
	}
	for _, r := range resp {
		if r.Err != nil {
			return fmt.Errorf("setting the replication throttle rate on broker %s: %v %s", r.Name, r.Err, r.ErrMessage)
		}
	}
	lv, fv := strings.Join(leader, ","), strings.Join(follower, ",")
	tresp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Name: "leader.replication.throttled.replicas", Value: &lv},
		{Name: "follower.replication.throttled.replicas", Value: &fv},
	}, topic)
	if err != nil {
		return fmt.Errorf("setting the throttled replicas of %s: %w", topic, err)
	}
	for _, r := range tresp {
		if r.Err != nil {
			return fmt.Errorf("setting the throttled replicas of %s: %v %s", topic, r.Err, r.ErrMessage)
		}
	}
	return nil
}
