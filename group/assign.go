package group

// The server-side assignors of the consumer protocol (KIP-848). Both are
// pure functions of the members' subscriptions (and, for uniform, of the
// previous target assignment), deterministic for the same input.
//
//   - uniform (Kafka's UniformAssignor, the default): every partition of a
//     subscribed topic goes to one of its subscribers, the counts per member
//     differ by at most one wherever subscriptions allow it, and a partition
//     stays with its previous member unless balance requires a move.
//   - range (Kafka's RangeAssignor): per topic, the subscribers sorted by
//     member id get contiguous ranges, the first ones one partition more;
//     members subscribed to co-partitioned topics get the same partition
//     numbers of each.

import (
	"slices"
	"strings"

	"github.com/gokafka/gokafka/cluster"
)

// assignMember is one member as an assignor sees it.
type assignMember struct {
	id     string
	topics []TopicMeta // existing topics it subscribes to, sorted by name
	prev   partSet     // its previous target
}

// assignedTopics returns the union of the members' topics sorted by name.
func assignedTopics(ms []assignMember) []TopicMeta {
	seen := map[cluster.TopicID]bool{}
	var out []TopicMeta
	for _, m := range ms {
		for _, t := range m.topics {
			if !seen[t.ID] {
				seen[t.ID] = true
				out = append(out, t)
			}
		}
	}
	slices.SortFunc(out, func(a, b TopicMeta) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func assignUniform(ms []assignMember) map[string]partSet {
	out := make(map[string]partSet, len(ms))
	for _, m := range ms {
		out[m.id] = partSet{}
	}
	topics := assignedTopics(ms)
	subscribers := map[cluster.TopicID][]int{}
	parts := map[cluster.TopicID]int32{}
	for i, m := range ms {
		for _, t := range m.topics {
			subscribers[t.ID] = append(subscribers[t.ID], i)
			parts[t.ID] = t.Partitions
		}
	}
	eligible := func(i int, id cluster.TopicID) bool { return slices.Contains(subscribers[id], i) }
	owner := map[TopicPartitionID]int{}
	count := make([]int, len(ms))
	// Stickiness: previous owners keep what they may still have.
	for i, m := range ms {
		for tp := range m.prev {
			if _, taken := owner[tp]; taken || tp.Partition >= parts[tp.Topic] || !eligible(i, tp.Topic) {
				continue
			}
			owner[tp] = i
			count[i]++
		}
	}
	var all []TopicPartitionID
	for _, t := range topics {
		for p := range t.Partitions {
			all = append(all, TopicPartitionID{t.ID, p})
		}
	}
	// Unowned partitions go to their least loaded subscriber.
	for _, tp := range all {
		if _, ok := owner[tp]; ok {
			continue
		}
		best := -1
		for _, i := range subscribers[tp.Topic] {
			if best < 0 || count[i] < count[best] {
				best = i
			}
		}
		owner[tp] = best
		count[best]++
	}
	// Balance: move a partition from a member to an eligible one holding
	// at least two fewer, until none can move. Each move lowers the sum of
	// squared counts, so this ends.
	for moved := true; moved; {
		moved = false
		for _, tp := range all {
			a := owner[tp]
			best := -1
			for _, i := range subscribers[tp.Topic] {
				if count[i] < count[a]-1 && (best < 0 || count[i] < count[best]) {
					best = i
				}
			}
			if best >= 0 {
				owner[tp] = best
				count[a]--
				count[best]++
				moved = true
			}
		}
	}
	for tp, i := range owner {
		out[ms[i].id][tp] = struct{}{}
	}
	return out
}

func assignRange(ms []assignMember) map[string]partSet {
	out := make(map[string]partSet, len(ms))
	for _, m := range ms {
		out[m.id] = partSet{}
	}
	for _, t := range assignedTopics(ms) {
		var subs []string
		for _, m := range ms {
			if slices.ContainsFunc(m.topics, func(x TopicMeta) bool { return x.ID == t.ID }) {
				subs = append(subs, m.id)
			}
		}
		slices.Sort(subs)
		n := int32(len(subs))
		per, extra := t.Partitions/n, t.Partitions%n
		p := int32(0)
		for i, id := range subs {
			k := per
			if int32(i) < extra {
				k++
			}
			for range k {
				out[id][TopicPartitionID{t.ID, p}] = struct{}{}
				p++
			}
		}
	}
	return out
}
