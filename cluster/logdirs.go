package cluster

// Offline log directories (KIP-858, Kafka's JBOD in KRaft).
//
// A broker registers the directory ids of its log dirs (BrokerRegistration
// v2+ LogDirs). When one fails, the broker tells the controller which of
// its replicas live there (AssignReplicasToDirs), recorded in each
// partition record as the directory of that broker's replica, and then
// names the dir in every heartbeat (BrokerHeartbeat v1+ OfflineLogDirs).
// On such a heartbeat the active controller does for those partitions what
// fencing does for all of a broker's partitions: the broker leaves their
// ISR (unless it is the last member) and loses their leadership to the
// first live replica in the remaining ISR (Kafka's
// ReplicationControlManager.handleDirectoriesOffline). Other partitions of
// the broker are untouched.
//
// Unlike Kafka, a broker sends AssignReplicasToDirs only for the replicas
// of a dir that failed, not whenever it places a replica: the controller
// needs the mapping only to act on an offline dir, and the broker still
// knows it then.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// logDirState is this broker's view of its own log dirs.
type logDirState struct {
	mu      sync.Mutex
	ids     [][16]byte
	offline func() [][16]byte
}

// SetLogDirs gives the directory ids this broker registers and a function
// returning those currently offline, which every heartbeat reports. Call
// it before Register.
func (c *Controller) SetLogDirs(ids [][16]byte, offline func() [][16]byte) {
	c.dirs.mu.Lock()
	defer c.dirs.mu.Unlock()
	c.dirs.ids = slices.Clone(ids)
	c.dirs.offline = offline
}

func (c *Controller) registeredLogDirs() []string {
	c.dirs.mu.Lock()
	defer c.dirs.mu.Unlock()
	out := make([]string, 0, len(c.dirs.ids))
	for _, id := range c.dirs.ids {
		out = append(out, DirID(id))
	}
	return out
}

func (c *Controller) offlineLogDirs() [][16]byte {
	c.dirs.mu.Lock()
	fn := c.dirs.offline
	c.dirs.mu.Unlock()
	if fn == nil {
		return nil
	}
	return fn()
}

// DirID renders a directory id as partition records and broker
// registrations keep it (Kafka's Uuid text form).
func DirID(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// AssignReplicasToDirs records that broker id keeps the listed partitions
// of topics (by name) in log dir dir (AssignReplicasToDirs, forwarded to
// the active controller when needed).
func (c *Controller) AssignReplicasToDirs(ctx context.Context, id int32, dir [16]byte, parts map[string][]int32) error {
	if !c.IsLeader() {
		im := c.Image()
		req := kmsg.NewPtrAssignReplicasToDirsRequest()
		req.BrokerID = id
		rd := kmsg.NewAssignReplicasToDirsRequestDirectory()
		rd.ID = dir
		for _, name := range slices.Sorted(maps.Keys(parts)) {
			t := im.Topics[name]
			if t == nil {
				continue
			}
			rt := kmsg.NewAssignReplicasToDirsRequestDirectoryTopic()
			rt.TopicID = t.ID
			for _, p := range parts[name] {
				rp := kmsg.NewAssignReplicasToDirsRequestDirectoryTopicPartition()
				rp.Partition = p
				rt.Partitions = append(rt.Partitions, rp)
			}
			rd.Topics = append(rd.Topics, rt)
		}
		req.Directories = append(req.Directories, rd)
		resp, err := c.forward(ctx, req, func(r kmsg.Response) bool {
			return r.(*kmsg.AssignReplicasToDirsResponse).ErrorCode == kerr.NotController.Code
		})
		if errors.Is(err, errLocalLeader) {
			return c.AssignReplicasToDirs(ctx, id, dir, parts)
		}
		if err != nil {
			return err
		}
		return codeErr(resp.(*kmsg.AssignReplicasToDirsResponse).ErrorCode, nil)
	}
	c.proposeMu.Lock()
	defer c.proposeMu.Unlock()
	im := c.Image()
	if _, ok := im.Brokers[id]; !ok {
		return fmt.Errorf("%w: broker %d is not registered", kerr.BrokerIDNotRegistered, id)
	}
	want := DirID(dir)
	var changes []PartitionChange
	for _, name := range slices.Sorted(maps.Keys(parts)) {
		t := im.Topics[name]
		if t == nil {
			continue
		}
		for _, pn := range parts[name] {
			if pn < 0 || int(pn) >= len(t.Partitions) {
				continue
			}
			p := t.Partitions[pn]
			if !contains32(p.Replicas, id) || p.Directories[id] == want {
				continue
			}
			next := p
			next.Directories = maps.Clone(p.Directories)
			if next.Directories == nil {
				next.Directories = map[int32]string{}
			}
			next.Directories[id] = want
			next.PartitionEpoch++
			changes = append(changes, PartitionChange{Topic: name, ExpectPartitionEpoch: p.PartitionEpoch, Next: next})
		}
	}
	if len(changes) == 0 {
		return nil
	}
	return c.log.Propose(ctx, &Command{Type: CmdChangePartitions, Changes: changes})
}

// offlineDirChanges returns the partition changes for broker id having
// the log dirs offline: fencing's changes, restricted to the partitions
// whose replica on id lives in one of them.
func offlineDirChanges(im *Image, id int32, offline [][16]byte, pol policy) []PartitionChange {
	if len(offline) == 0 {
		return nil
	}
	dirs := make(map[string]bool, len(offline))
	for _, d := range offline {
		dirs[DirID(d)] = true
	}
	var out []PartitionChange
	for _, ch := range fenceChanges(im, id, pol) {
		cur := im.Topics[ch.Topic].Partitions[ch.Next.Partition]
		if dirs[cur.Directories[id]] {
			out = append(out, ch)
		}
	}
	return out
}

// handleOfflineDirsLocked moves leadership and ISR membership of broker
// id's replicas in offline dirs away (on the active controller, under
// proposeMu). Idempotent: a heartbeat repeating the same dirs changes
// nothing more.
func (c *Controller) handleOfflineDirsLocked(ctx context.Context, im *Image, id int32, offline [][16]byte) error {
	var cmds []*Command
	ids := make([]string, 0, len(offline))
	for _, d := range offline {
		ids = append(ids, DirID(d))
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if !slices.Equal(ids, im.Brokers[id].OfflineLogDirs) {
		cmds = append(cmds, &Command{Type: CmdSetOfflineLogDirs, BrokerID: id, LogDirs: ids})
	}
	ch := offlineDirChanges(im, id, offline, c.policyFor(im))
	if len(ch) > 0 {
		cmds = append(cmds, &Command{Type: CmdChangePartitions, Changes: ch})
	}
	if len(cmds) == 0 {
		return nil
	}
	if err := c.log.Propose(ctx, cmds...); err != nil {
		return err
	}
	c.logger.Warn().Int32("broker", id).Strs("offline_log_dirs", ids).Int("partitions", len(ch)).Msg("replicas in offline log dirs lost leadership and ISR membership")
	return nil
}

func (s *State) applyOfflineLogDirs(cmd *Command) error {
	b, ok := s.brokers[cmd.BrokerID]
	if !ok {
		return fmt.Errorf("unknown broker %d", cmd.BrokerID)
	}
	b.OfflineLogDirs = slices.Clone(cmd.LogDirs)
	s.brokers[cmd.BrokerID] = b
	return nil
}

// ReplicaOffline reports whether broker r's replica of p is offline: the
// broker is unknown or fenced, or the replica is in one of its offline
// log dirs (Metadata's OfflineReplicas).
func ReplicaOffline(im *Image, p *PartitionInfo, r int32) bool {
	b, ok := im.Brokers[r]
	if !ok || b.Fenced {
		return true
	}
	d, ok := p.Directories[r]
	return ok && slices.Contains(b.OfflineLogDirs, d)
}

// ReportOfflineLogDir tells the controller, in the background and until
// it succeeds or the controller closes, which of this broker's partitions
// were in the log dir that went offline, then heartbeats at once so the
// controller moves them.
func (c *Controller) ReportOfflineLogDir(dir [16]byte, parts map[string][]int32) {
	select {
	case <-c.stop:
		return // closing: nothing to report to
	default:
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		backoff := 50 * time.Millisecond
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := c.AssignReplicasToDirs(ctx, c.cfg.NodeID, dir, parts)
			if err == nil {
				_, _, err = c.Heartbeat(ctx, false)
			}
			cancel()
			if err == nil {
				return
			}
			c.logger.Warn().Err(err).Str("log_dir", DirID(dir)).Msg("reporting offline log dir to the controller failed; retrying")
			select {
			case <-c.stop:
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, time.Second)
		}
	}()
}
