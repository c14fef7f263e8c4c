package main

import (
	"context"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// scale measures what a cluster pays for many partitions (s8): creating
// them, a first acknowledged record on every one, and a clean restart of
// one node holding a replica of each.
func (r *runner) scale(ctx context.Context, sc scenario, srv *server) ([]metric, error) {
	c := r.scenarioLoad(sc, srv.addrs)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cl, err := oneEachClient(srv.addrs, c.partitions)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32((5 * time.Minute).Milliseconds()))

	cpu0, err := srv.cpu()
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	resp, err := adm.CreateTopic(ctx, int32(c.partitions), int16(c.rf), nil, c.topic)
	if err != nil {
		return nil, fmt.Errorf("creating %s (%d partitions): %v %s", c.topic, c.partitions, err, resp.ErrMessage)
	}
	created := time.Since(t0)
	cpu1, err := srv.cpu()
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(r.log, "created in %v (server CPU %v); ", created.Round(time.Millisecond), (cpu1 - cpu0).Round(time.Millisecond))

	t1 := time.Now()
	if err := produceOneEach(ctx, cl, c.topic, c.partitions, c.recordSize); err != nil {
		return nil, err
	}
	produced := time.Since(t1)
	cpu2, err := srv.cpu()
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(r.log, "first-produced in %v (server CPU %v); ", produced.Round(time.Millisecond), (cpu2 - cpu1).Round(time.Millisecond))

	// A clean restart of the last node: it holds a replica of every
	// partition (RF = nodes) and led about a third of them.
	last := len(srv.procs) - 1
	if err := srv.restart(last); err != nil {
		return nil, err
	}
	started := srv.procs[last].started
	addr := srv.addrs[last]
	for {
		conn, err := dialOnce(addr)
		if err == nil {
			conn.Close()
			break
		}
		if err := srv.checkAlive(); err != nil {
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("restarted node did not accept: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
	acceptAt := time.Since(started)
	one, err := newClient([]string{addr})
	if err != nil {
		return nil, err
	}
	defer one.Close()
	for {
		resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, one)
		if err == nil && len(resp.Brokers) == len(srv.addrs) {
			break
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("restarted node not serving metadata: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	servingAt := time.Since(started)
	fmt.Fprintf(r.log, "restarted node serving after %v; ", servingAt.Round(time.Millisecond))
	// Rejoining every ISR takes one AlterPartition per partition; it is
	// reported if it completes within -scale-isr-wait.
	node := int32(last + 1)
	isrAt := time.Duration(-1)
	for isrDeadline := time.Now().Add(r.opts.scaleISRWait); ; {
		n, err := partitionsWithout(ctx, cl, c.topic, node)
		if err == nil && n == 0 {
			isrAt = time.Since(started)
			break
		}
		if ctx.Err() != nil || time.Now().After(isrDeadline) {
			fmt.Fprintf(r.log, "not back in %d ISRs after %v; ", n, time.Since(started).Round(time.Millisecond))
			break
		}
		time.Sleep(100 * time.Millisecond)
	}

	res := &result{}
	res.add(fmt.Sprintf("create %d partitions", c.partitions), "ms", ms(created), false)
	res.add("create: server CPU, all nodes", "ms", ms(cpu1-cpu0), false)
	res.add("then first acked record on each", "ms", ms(produced), false)
	res.add("first records: server CPU, all nodes", "ms", ms(cpu2-cpu1), false)
	res.add("restart: spawn to first accept", "ms", ms(acceptAt), false)
	res.add("restart: spawn to serving metadata", "ms", ms(servingAt), false)
	if isrAt >= 0 {
		res.add("restart: spawn to back in every ISR", "ms", ms(isrAt), false)
	}
	return res.Metrics, nil
}

// partitionsWithout counts topic's partitions whose ISR lacks node.
func partitionsWithout(ctx context.Context, cl *kgo.Client, topic string, node int32) (int, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return -1, err
	}
	if len(resp.Topics) != 1 {
		return -1, fmt.Errorf("metadata lists %d topics", len(resp.Topics))
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		return -1, err
	}
	n := 0
	for _, p := range resp.Topics[0].Partitions {
		if !slices.Contains(p.ISR, node) {
			n++
		}
	}
	return n, nil
}

func dialOnce(addr string) (net.Conn, error) {
	return net.DialTimeout("tcp", addr, 100*time.Millisecond)
}
