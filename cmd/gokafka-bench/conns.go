package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// connections measures what many mostly idle producer connections cost a
// server (s9): -s9-conns kgo clients, each pinned to one partition (so it
// keeps one connection to that partition's leader), each producing one
// small acks=all record every -s9-interval. It times every client's set-up
// (new client to its first acknowledged record, which takes ApiVersions,
// Metadata, the dial to the leader and a Produce), then, with every client
// connected, the server's CPU and memory per node over -s9-window and the
// records' ack latency.
func (r *runner) connections(ctx context.Context, sc scenario, srv *server) ([]metric, error) {
	o := r.opts
	c := r.scenarioLoad(sc, srv.addrs)
	n := o.s9Conns
	// Each client holds its leader connection and, until it idles out,
	// its seed connection; the load generator shares the limit with the
	// clients of ensureTopic and a kfake child (which has its own).
	if limit, ok := raiseOpenFilesLimit(); ok && uint64(2*n+256) > limit {
		return nil, fmt.Errorf("%d client connections need about %d open files in the load generator; RLIMIT_NOFILE allows %d", n, 2*n+256, limit)
	}
	tctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	err := ensureTopic(tctx, c.brokers, c.topic, c.partitions, c.rf)
	cancel()
	if err != nil {
		return nil, err
	}
	rss0, err := srv.rssEach()
	if err != nil {
		return nil, err
	}
	sock0, err := srv.socketsEach()
	if err != nil {
		return nil, err
	}

	// The seed connection each client opens for its first metadata
	// idles out after this, leaving the one connection to its leader.
	idle := max(5*time.Second, 3*o.s9Interval)
	value := make([]byte, c.recordSize)
	var (
		measuring  atomic.Bool
		ackLat     syncHistogram
		setupLat   syncHistogram
		acked      atomic.Int64
		errCount   atomic.Int64
		setupErrs  atomic.Int64
		firstErr   atomic.Pointer[error]
		mu         sync.Mutex
		clients    []*kgo.Client
		ready      sync.WaitGroup
		loops      sync.WaitGroup
		stopClient = make(chan struct{})
	)
	noteErr := func(err error) {
		if errCount.Add(1) == 1 {
			firstErr.Store(&err)
		}
	}
	defer func() {
		// Closing 2,000 clients one after another takes seconds; they
		// close in parallel.
		var wg sync.WaitGroup
		mu.Lock()
		for _, cl := range clients {
			wg.Go(cl.Close)
		}
		mu.Unlock()
		wg.Wait()
	}()

	// Clients start -s9-parallel (64) at a time: the load generator
	// shares the two cores with the servers, and 2,000 clients set up at
	// once would time mostly its own scheduler; -s9-parallel equal to
	// -s9-conns is a reconnection storm.
	sem := make(chan struct{}, o.s9Parallel)
	setupStart := time.Now()
	for i := range n {
		ready.Add(1)
		sem <- struct{}{}
		if ctx.Err() != nil {
			ready.Done()
			break
		}
		loops.Go(func() {
			t0 := time.Now()
			cl, err := newClient(c.brokers,
				kgo.DefaultProduceTopic(c.topic),
				kgo.RecordPartitioner(kgo.ManualPartitioner()),
				kgo.RequiredAcks(acksOpt(c.acks)),
				kgo.DisableIdempotentWrite(),
				kgo.ProducerLinger(0),
				kgo.RecordDeliveryTimeout(time.Minute),
				kgo.ConnIdleTimeout(idle),
				kgo.ClientID(fmt.Sprintf("gokafka-bench-s9-%d", i)),
			)
			if err != nil {
				<-sem
				setupErrs.Add(1)
				noteErr(err)
				ready.Done()
				return
			}
			mu.Lock()
			clients = append(clients, cl)
			mu.Unlock()
			part := int32(i % c.partitions)
			err = cl.ProduceSync(ctx, &kgo.Record{Partition: part, Value: value}).FirstErr()
			<-sem
			if err != nil {
				setupErrs.Add(1)
				noteErr(err)
				ready.Done()
				return
			}
			setupLat.record(time.Since(t0))
			ready.Done()

			// One record every interval, at a random phase so that the
			// clients do not all send in the same millisecond.
			phase := time.Duration(rand.Int64N(int64(o.s9Interval)))
			select {
			case <-time.After(phase):
			case <-stopClient:
				return
			}
			t := time.NewTicker(o.s9Interval)
			defer t.Stop()
			for {
				sent := time.Now()
				counted := measuring.Load()
				cl.Produce(ctx, &kgo.Record{Partition: part, Value: value}, func(_ *kgo.Record, err error) {
					if !counted {
						return
					}
					if err != nil {
						noteErr(err)
						return
					}
					ackLat.record(time.Since(sent))
					acked.Add(1)
				})
				select {
				case <-t.C:
				case <-stopClient:
					return
				}
			}
		})
	}
	ready.Wait()
	setupAll := time.Since(setupStart)
	fmt.Fprintf(r.log, " %d connected in %v;", n-int(setupErrs.Load()), setupAll.Round(time.Millisecond))
	if ctx.Err() != nil {
		close(stopClient)
		loops.Wait()
		return nil, ctx.Err()
	}

	cpu0, err := srv.cpuEach()
	if err != nil {
		close(stopClient)
		loops.Wait()
		return nil, err
	}
	measuring.Store(true)
	t0 := time.Now()
	select {
	case <-time.After(o.s9Window):
	case <-ctx.Done():
	}
	measuring.Store(false)
	cpu1, cpuErr := srv.cpuEach()
	window := time.Since(t0)
	rss1, rssErr := srv.rssEach()
	sock1, sockErr := srv.socketsEach()
	close(stopClient)
	loops.Wait()
	// The last records of the window are acknowledged before the clients
	// close.
	fctx, fcancel := context.WithTimeout(ctx, time.Minute)
	mu.Lock()
	var fw sync.WaitGroup
	for _, cl := range clients {
		fw.Go(func() { _ = cl.Flush(fctx) })
	}
	mu.Unlock()
	fw.Wait()
	fcancel()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err := firstError(cpuErr, rssErr, sockErr, srv.checkAlive()); err != nil {
		return nil, err
	}

	nodes := float64(sc.Nodes)
	var cpuSum, cpuMax, rssSum, rssBase float64
	var conns int
	for i := range cpu0 {
		cs := (cpu1[i] - cpu0[i]).Seconds() / window.Minutes()
		cpuSum += cs
		cpuMax = max(cpuMax, cs)
		rssSum += float64(rss1[i])
		rssBase += float64(rss0[i])
		conns += sock1[i] - sock0[i]
	}
	res := &result{}
	res.add("connections set up", "conns", float64(n-int(setupErrs.Load())), true)
	res.add("set-up: new client to first ack p50", "ms", ms(setupLat.snapshot().quantile(0.50)), false)
	res.add("set-up: new client to first ack p99", "ms", ms(setupLat.snapshot().quantile(0.99)), false)
	res.add(fmt.Sprintf("set-up: all %d clients", n), "s", setupAll.Seconds(), false)
	res.add("server connections per node", "conns", float64(conns)/nodes, false)
	res.add("server CPU per node", "s/min", cpuSum/nodes, false)
	res.add("server CPU per node, share of a core", "%", cpuSum/nodes/60*100, false)
	res.add("server CPU, busiest process", "s/min", cpuMax, false)
	res.add("RSS per node", "MiB", rssSum/nodes/(1<<20), false)
	res.add("RSS per connection (growth over idle)", "KiB", ratio(rssSum-rssBase, float64(conns))/1024, false)
	ack := ackLat.snapshot()
	res.add("records acked/s", "rec/s", float64(acked.Load())/window.Seconds(), true)
	res.add("record ack p50", "ms", ms(ack.quantile(0.50)), false)
	res.add("record ack p99", "ms", ms(ack.quantile(0.99)), false)
	res.add("record ack max", "ms", ms(ack.quantile(1)), false)
	res.add("errors (set-up and window)", "count", float64(errCount.Load()), false)
	if p := firstErr.Load(); p != nil {
		fmt.Fprintf(r.log, " first error: %v;", *p)
	}
	return res.Metrics, nil
}

func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// socketsEach counts the sockets each of the server's processes holds open
// (its /proc/PID/fd entries that are sockets): listeners, inter-broker and
// client connections.
func (s *server) socketsEach() ([]int, error) {
	var out []int
	for _, p := range s.procs {
		n, err := processSockets(p.pid())
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

func processSockets(pid int) (int, error) {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink(dir + "/" + e.Name()); err == nil && strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n, nil
}
