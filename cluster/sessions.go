package cluster

import (
	"time"
)

// sessions is the active controller's view of broker sessions
// (broker.session.timeout.ms): when each broker was last heard from, and
// which unfenced brokers have been silent too long. It is pure: the
// caller supplies the time and does the fencing. A controller that just
// took over knows nothing of earlier heartbeats and gives every broker a
// full session, as Kafka's BrokerHeartbeatManager does on failover.
type sessions struct {
	timeout  time.Duration
	lastSeen map[int32]time.Time
	// term is the raft term of the leadership the sessions belong to; 0
	// until the first check of a leadership. A leadership lost and
	// regained between two checks is a new term, and starts afresh too:
	// the heartbeats meanwhile went to another controller.
	term uint64
}

func newSessions(timeout time.Duration) *sessions {
	return &sessions{timeout: timeout, lastSeen: map[int32]time.Time{}}
}

// Seen records a registration or heartbeat from broker id at now.
func (s *sessions) Seen(id int32, now time.Time) { s.lastSeen[id] = now }

// Alive reports whether broker id was heard from within the session
// timeout before now.
func (s *sessions) Alive(id int32, now time.Time) bool {
	seen, ok := s.lastSeen[id]
	return ok && now.Sub(seen) < s.timeout
}

// Resign forgets the leadership: the next Expired starts every session
// afresh.
func (s *sessions) Resign() { s.term = 0 }

// Expired returns, in id order, the unfenced brokers of im not heard from
// for longer than the session timeout at now, in the leadership of raft
// term term. A broker it has not seen before starts its session now, and
// so does every broker in a term it has not checked before.
func (s *sessions) Expired(im *Image, now time.Time, term uint64) []int32 {
	if s.term != term {
		for id := range im.Brokers {
			s.lastSeen[id] = now
		}
		s.term = term
	}
	var out []int32
	for _, id := range im.BrokerIDs() {
		last, ok := s.lastSeen[id]
		if !ok {
			s.lastSeen[id] = now
			continue
		}
		if !im.Brokers[id].Fenced && now.Sub(last) > s.timeout {
			out = append(out, id)
		}
	}
	return out // in id order, as BrokerIDs gives them
}

// NextExpiry returns when the first unfenced broker of im would expire if
// not heard from again, in the leadership of raft term term: after
// Expired, the time the next Expired can find one. ok is false when no
// session runs (none heard from yet, or a term not checked yet: Expired
// starts those sessions).
func (s *sessions) NextExpiry(im *Image, term uint64) (at time.Time, ok bool) {
	if s.term != term {
		return time.Time{}, false
	}
	for id, b := range im.Brokers {
		last, seen := s.lastSeen[id]
		if !seen || b.Fenced {
			continue
		}
		// Expired wants strictly more than the timeout.
		if exp := last.Add(s.timeout + time.Millisecond); !ok || exp.Before(at) {
			at, ok = exp, true
		}
	}
	return at, ok
}
