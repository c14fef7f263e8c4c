package broker

import (
	"slices"
	"strings"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/console"
	"github.com/gokafka/gokafka/group"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/replication"
)

// ConsoleSource returns what the built-in console reads of this broker
// (console.New(srv.ConsoleSource(), …)): its metadata image, its replica
// manager's view of the partitions it hosts, the groups it coordinates
// and the open transactions of the partitions it leads. Reading it sends
// no request anywhere. Close the console before the server shuts down.
func (s *Server) ConsoleSource() console.Source { return consoleSource{s} }

type consoleSource struct{ s *Server }

func (c consoleSource) WatchMetadata(fn func(prev, next *cluster.Image)) { c.s.meta.Watch(fn) }

func (c consoleSource) State() console.State {
	s := c.s
	im := s.meta.Image()
	st := console.State{Node: s.cfg.NodeID, ClusterID: im.ClusterID, Controller: im.ControllerID, MetadataOffset: im.Offset}
	for _, id := range sortedKeys(im.Brokers) {
		b := im.Brokers[id]
		cb := console.Broker{ID: id, Host: b.Host, Port: b.Port, Fenced: b.Fenced, Controller: id == im.ControllerID,
			LogDirs: len(b.LogDirs), OfflineLogDirs: len(b.OfflineLogDirs)}
		if b.Rack != nil {
			cb.Rack = *b.Rack
		}
		st.Brokers = append(st.Brokers, cb)
	}

	views := map[partition.TopicPartition]replication.ReplicaView{}
	for _, v := range s.replicas.ReplicaViews() {
		views[v.TP] = v
	}
	hws := map[partition.TopicPartition]int64{}
	names := make([]string, 0, len(im.Topics))
	for name := range im.Topics {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		t := im.Topics[name]
		ct := console.Topic{Name: name, Internal: strings.HasPrefix(name, "__")}
		for _, p := range t.Partitions {
			tp := partition.TopicPartition{Topic: name, Partition: p.Partition}
			cp := console.Partition{Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
				ISR: slices.Clone(p.ISR), ELR: slices.Clone(p.ELR), View: "metadata"}
			v, hosted := views[tp]
			if hosted {
				hw, start := v.HW, v.LogStart
				cp.HW, cp.LogStart = &hw, &start
				hws[tp] = hw
				cp.View = "follower"
				if v.Leader {
					cp.View = "leader"
					// The committed ISR as the leader acts on it may be
					// ahead of the metadata this image shows.
					cp.ISR = slices.Clone(v.ISR)
					lso := hw
					for _, tx := range s.openTxns(tp, hw) {
						lso = min(lso, tx.FirstOffset)
						st.Transactions = append(st.Transactions, tx)
					}
					cp.LSO = &lso
				}
			}
			for _, id := range p.Replicas {
				r := console.Replica{ID: id, InISR: slices.Contains(cp.ISR, id), Leader: id == p.Leader}
				switch {
				case hosted && id == s.cfg.NodeID:
					leo := v.LEO
					r.LEO = &leo
				case hosted && v.Leader:
					for _, f := range v.Followers {
						if f.ID == id && f.LEO >= 0 {
							leo, lag := f.LEO, max(v.LEO-f.LEO, 0)
							r.LEO, r.LagOffsets, r.LagMs = &leo, &lag, f.SinceCaughtUp.Milliseconds()
						}
					}
				}
				cp.Replicas = append(cp.Replicas, r)
			}
			ct.Partitions = append(ct.Partitions, cp)
		}
		st.Topics = append(st.Topics, ct)
	}

	if s.groups != nil {
		if gs, err := s.groups.ListGroups(nil); err == nil {
			slices.SortFunc(gs, func(a, b groupOverview) int { return strings.Compare(a.GroupID, b.GroupID) })
			for _, g := range gs {
				cg := console.Group{ID: g.GroupID, State: g.StateName, Type: g.Type}
				if cg.State == "" {
					cg.State = g.State.String()
				}
				offs, _ := s.groups.FetchOffsets(g.GroupID, nil)
				slices.SortFunc(offs, func(a, b fetchedOffset) int {
					if c := strings.Compare(a.TP.Topic, b.TP.Topic); c != 0 {
						return c
					}
					return int(a.TP.Partition - b.TP.Partition)
				})
				for _, o := range offs {
					gp := console.GroupPartition{Topic: o.TP.Topic, Partition: o.TP.Partition, Committed: o.Offset}
					if hw, ok := hws[partition.TopicPartition{Topic: o.TP.Topic, Partition: o.TP.Partition}]; ok {
						lag := max(hw-o.Offset, 0)
						gp.HW, gp.Lag = &hw, &lag
						cg.Lag += lag
					}
					cg.Partitions = append(cg.Partitions, gp)
				}
				st.Groups = append(st.Groups, cg)
			}
		}
	}
	return st
}

// openTxns lists the open transactions of a partition this broker leads;
// none while its producer state is still loading.
func (s *Server) openTxns(tp partition.TopicPartition, hw int64) []console.Transaction {
	ps, err := s.replicas.Producers(tp)
	if err != nil {
		return nil
	}
	var out []console.Transaction
	for _, p := range ps {
		if p.CurrentTxnStartOffset < 0 {
			continue
		}
		out = append(out, console.Transaction{Topic: tp.Topic, Partition: tp.Partition, ProducerID: p.ProducerID, Epoch: p.Epoch,
			FirstOffset: p.CurrentTxnStartOffset, HW: hw})
	}
	lso := hw
	for _, t := range out {
		lso = min(lso, t.FirstOffset)
	}
	for i := range out {
		out[i].LSO, out[i].Held = lso, max(hw-lso, 0)
	}
	return out
}

func sortedKeys[V any](m map[int32]V) []int32 {
	out := make([]int32, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

type (
	groupOverview = group.GroupOverview
	fetchedOffset = group.FetchedOffset
)
