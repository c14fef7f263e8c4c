package cluster

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// freeVoters are n voters (ids 1..n) on distinct loopback addresses
// nothing listens on right now: each is held open until all are picked,
// so that two of them cannot get the same port.
func freeVoters(t *testing.T, n int32) []Voter {
	t.Helper()
	var voters []Voter
	for id := int32(1); id <= n; id++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		voters = append(voters, Voter{ID: id, Addr: l.Addr().String()})
	}
	return voters
}

// A fresh quorum elects its leader once a majority of voters runs, without
// first waiting out an election timeout: a voter that knows no leader asks
// for one as it starts (a pre-vote, then a vote). The election timeout here
// is far longer than the test may take.
func TestQuorum_FreshVotersElectWithoutWaitingElectionTimeout(t *testing.T) {
	voters := freeVoters(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type opened struct {
		c   *Controller
		err error
	}
	results := make(chan opened, len(voters))
	start := func(v Voter) {
		cfg := testConfig()
		cfg.NodeID = v.ID
		qc := QuorumConfig{Voters: voters, BindAddr: v.Addr, Dir: t.TempDir(), SessionTimeout: time.Hour, ElectionTimeout: time.Minute}
		go func() {
			c, err := Open(ctx, cfg, qc, zerolog.Nop().With().Str("node", strconv.Itoa(int(v.ID))).Logger())
			results <- opened{c, err}
		}()
	}
	var ctrls []*Controller
	defer func() {
		for _, c := range ctrls {
			c.Close()
		}
	}()
	collect := func() {
		t.Helper()
		r := <-results
		if r.err != nil {
			t.Fatalf("opening a voter of a fresh quorum: %v", r.err)
		}
		ctrls = append(ctrls, r.c)
	}
	// Voter 1 starts alone: its own request finds nobody and it goes
	// back to waiting out its (long) timeout. Voter 2 asks as it starts,
	// and the two make a majority. (Had the two asked at the same moment,
	// each would have voted for itself and waited a timeout.)
	start(voters[0])
	for {
		conn, err := net.Dial("tcp", voters[0].Addr)
		if err == nil {
			conn.Close()
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("voter 1 never listened: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(time.Second)
	start(voters[1])
	collect()
	collect()
	// Voter 3 joins the quorum that has a leader.
	start(voters[2])
	collect()
	leader := ctrls[0].log.Leader()
	if leader < 1 || leader > 3 {
		t.Fatalf("quorum leader %d", leader)
	}
}

// Voters that start at the same moment ask for the election in the order
// of their ids rather than all at once, so they do not split the vote and
// wait out an election timeout (far longer here than the test may take).
func TestQuorum_VotersStartingTogetherElectWithoutWaitingElectionTimeout(t *testing.T) {
	voters := freeVoters(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type opened struct {
		c   *Controller
		err error
	}
	results := make(chan opened, len(voters))
	for _, v := range voters {
		cfg := testConfig()
		cfg.NodeID = v.ID
		qc := QuorumConfig{Voters: voters, BindAddr: v.Addr, Dir: t.TempDir(), SessionTimeout: time.Hour, ElectionTimeout: time.Minute}
		go func() {
			c, err := Open(ctx, cfg, qc, zerolog.Nop())
			results <- opened{c, err}
		}()
	}
	var ctrls []*Controller
	defer func() {
		for _, c := range ctrls {
			c.Close()
		}
	}()
	for range voters {
		r := <-results
		if r.err != nil {
			t.Fatalf("opening a voter of a fresh quorum: %v", r.err)
		}
		ctrls = append(ctrls, r.c)
	}
}
