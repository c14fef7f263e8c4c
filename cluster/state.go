package cluster

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"weak"

	"github.com/gokafka/gokafka/acl"

	"github.com/gokafka/gokafka/sasl"
)

// CommandType names a metadata change.
type CommandType string

const (
	CmdRegisterBroker   CommandType = "register_broker"
	CmdCreateTopic      CommandType = "create_topic"
	CmdDeleteTopic      CommandType = "delete_topic"
	CmdCreatePartitions CommandType = "create_partitions"
	CmdSetTopicConfigs  CommandType = "set_topic_configs"
	CmdSetBrokerConfigs CommandType = "set_broker_configs"
	// CmdChangePartitions replaces partition records (leader, epochs,
	// ISR), each only if its partition epoch is still the one the change
	// was computed from.
	CmdChangePartitions CommandType = "change_partitions"
	// CmdFenceBroker and CmdUnfenceBroker change a broker's liveness.
	CmdFenceBroker   CommandType = "fence_broker"
	CmdUnfenceBroker CommandType = "unfence_broker"
	// CmdUnregisterBroker removes a decommissioned broker's registration
	// (UnregisterBroker, key 64).
	CmdUnregisterBroker CommandType = "unregister_broker"
	// CmdInitCluster gives a new cluster its id.
	CmdInitCluster CommandType = "init_cluster"
	// CmdAllocateProducerIDs gives a broker the next block of producer ids.
	CmdAllocateProducerIDs CommandType = "allocate_producer_ids"
	// CmdSetGroupConfigs replaces a group's config overrides (resource
	// type GROUP).
	CmdSetGroupConfigs CommandType = "set_group_configs"
	// CmdShareState changes the share-partition start offsets of a share
	// group (see ShareChange).
	CmdShareState CommandType = "share_state"
	// CmdSetOfflineLogDirs records the log dirs a broker reports offline
	// (BrokerID, LogDirs).
	CmdSetOfflineLogDirs CommandType = "set_offline_log_dirs"
	// CmdClientQuotas sets and removes client quota values (see
	// QuotaChange).
	CmdClientQuotas CommandType = "client_quotas"
)

// ProducerIDBlockSize is how many producer ids one allocation hands out,
// as in Kafka.
const ProducerIDBlockSize = 1000

// PartitionChange is one partition record replacement.
type PartitionChange struct {
	Topic string `json:"topic"`
	// ExpectPartitionEpoch is the partition epoch the change was computed
	// from; the change is refused if the record moved on since.
	ExpectPartitionEpoch int32         `json:"expect_partition_epoch"`
	Next                 PartitionInfo `json:"next"`
}

// Command is one entry of the metadata log. Apply must be deterministic:
// every node applying the same commands reaches the same State.
type Command struct {
	Type       CommandType       `json:"type"`
	Broker     *BrokerInfo       `json:"broker,omitempty"`
	Topic      *TopicInfo        `json:"topic,omitempty"`
	Name       string            `json:"name,omitempty"`
	Partitions []PartitionInfo   `json:"partitions,omitempty"`
	Configs    map[string]string `json:"configs,omitempty"`
	ClusterID  string            `json:"cluster_id,omitempty"`
	Changes    []PartitionChange `json:"changes,omitempty"`
	BrokerID   int32             `json:"broker_id,omitempty"`
	// ProducerIDStart is the first id of an allocated block.
	ProducerIDStart int64 `json:"producer_id_start,omitempty"`
	// Share is the change of a CmdShareState.
	Share *ShareChange `json:"share,omitempty"`
	// LogDirs are the directory ids of a CmdSetOfflineLogDirs.
	LogDirs []string `json:"log_dirs,omitempty"`
	// Quotas are the changes of a CmdClientQuotas.
	Quotas []QuotaChange `json:"quotas,omitempty"`
	// ACLs are the bindings of a CmdCreateACLs or CmdDeleteACLs.
	ACLs []acl.Binding `json:"acls,omitempty"`
	// Scram are the changes of a CmdScram.
	Scram []ScramChange `json:"scram,omitempty"`
}

// State is the metadata state machine. It is not safe for concurrent use;
// the Log that owns it serialises Apply and Image.
type State struct {
	clusterID     string
	offset        int64
	brokers       map[int32]BrokerInfo
	topics        map[string]*TopicInfo
	ids           map[TopicID]string
	brokerConfigs map[string]map[string]string
	groupConfigs  map[string]map[string]string
	shareGroups   map[string]*ShareGroupState
	clientQuotas  map[string]*ClientQuota
	// acls are sorted and replaced, never changed in place (acls.go).
	acls []acl.Binding
	// scram holds SCRAM credentials by user, then mechanism.
	scram map[string]map[string]sasl.ScramCredential
	// nextProducerID is the first producer id not yet given to a broker.
	nextProducerID int64
}

// NewState returns an empty state.
func NewState() *State {
	return &State{
		brokers:       make(map[int32]BrokerInfo),
		topics:        make(map[string]*TopicInfo),
		ids:           make(map[TopicID]string),
		brokerConfigs: make(map[string]map[string]string),
		groupConfigs:  make(map[string]map[string]string),
		shareGroups:   make(map[string]*ShareGroupState),
		clientQuotas:  make(map[string]*ClientQuota),
		scram:         make(map[string]map[string]sasl.ScramCredential),
	}
}

// Apply applies cmd as log entry offset. An error means the command was
// invalid against the current state; the state is then unchanged (the
// controller validates before proposing, so this guards against races
// between two proposals).
func (s *State) Apply(offset int64, cmd *Command) error {
	return s.ApplyEntry(offset, []*Command{cmd})
}

// ApplyEntry applies the commands of one log entry at offset, all or none:
// they run against a copy of the state that replaces it only when every
// one succeeded. An error names the command that failed; the state is then
// unchanged. A fence that moves leaderships, say, is one entry of two
// commands, and applying the first without the second would leave a
// fenced broker leading with nothing to retry the move.
func (s *State) ApplyEntry(offset int64, cmds []*Command) error {
	next := s.clone()
	for i, cmd := range cmds {
		if err := next.apply(offset, cmd); err != nil {
			if len(cmds) > 1 {
				return fmt.Errorf("command %d of %d (%s): %w", i+1, len(cmds), cmd.Type, err)
			}
			return err
		}
	}
	next.offset = offset
	*s = *next
	return nil
}

// clone returns a state that can be changed without changing s. Copying
// the maps is enough: apply replaces the values they hold (topics, share
// groups, config sets) rather than mutating them, as Image relies on too.
func (s *State) clone() *State {
	cp := *s
	cp.brokers = maps.Clone(s.brokers)
	cp.topics = maps.Clone(s.topics)
	cp.ids = maps.Clone(s.ids)
	cp.brokerConfigs = maps.Clone(s.brokerConfigs)
	cp.groupConfigs = maps.Clone(s.groupConfigs)
	cp.shareGroups = maps.Clone(s.shareGroups)
	cp.clientQuotas = maps.Clone(s.clientQuotas)
	cp.scram = maps.Clone(s.scram)
	return &cp
}

func (s *State) apply(offset int64, cmd *Command) error {
	switch cmd.Type {
	case CmdAllocateProducerIDs:
		// The controller computed the block from its image; refuse it if
		// that image was behind, so a block is never handed out twice.
		if cmd.ProducerIDStart != s.nextProducerID {
			return fmt.Errorf("%w: producer id block starts at %d, not %d", ErrInvalidUpdateVersion, s.nextProducerID, cmd.ProducerIDStart)
		}
		s.nextProducerID += ProducerIDBlockSize
	case CmdInitCluster:
		if s.clusterID == "" {
			s.clusterID = cmd.ClusterID
		}
	case CmdRegisterBroker:
		if cmd.Broker == nil {
			return fmt.Errorf("register_broker without broker")
		}
		b := *cmd.Broker
		b.Epoch = offset
		s.brokers[b.NodeID] = b
	case CmdCreateTopic:
		t := cmd.Topic
		if t == nil {
			return fmt.Errorf("create_topic without topic")
		}
		if _, ok := s.topics[t.Name]; ok {
			return fmt.Errorf("%w: %s", ErrTopicExists, t.Name)
		}
		if _, ok := s.ids[t.ID]; ok {
			return fmt.Errorf("topic id collision for %s", t.Name)
		}
		cp := *t
		cp.changedFrom, cp.changed = weak.Pointer[TopicInfo]{}, nil
		cp.Partitions = append([]PartitionInfo(nil), t.Partitions...)
		cp.Configs = maps.Clone(t.Configs)
		s.topics[t.Name] = &cp
		s.ids[t.ID] = t.Name
	case CmdDeleteTopic:
		t, ok := s.topics[cmd.Name]
		if !ok {
			return fmt.Errorf("%w: %s", ErrUnknownTopic, cmd.Name)
		}
		delete(s.topics, cmd.Name)
		delete(s.ids, t.ID)
		s.dropShareTopic(cmd.Name)
	case CmdCreatePartitions:
		t, ok := s.topics[cmd.Name]
		if !ok {
			return fmt.Errorf("%w: %s", ErrUnknownTopic, cmd.Name)
		}
		cp := *t
		cp.changedFrom, cp.changed = weak.Pointer[TopicInfo]{}, nil
		cp.Partitions = append(append([]PartitionInfo(nil), t.Partitions...), cmd.Partitions...)
		for i := range cp.Partitions {
			if cp.Partitions[i].Partition != int32(i) {
				return fmt.Errorf("create_partitions: partition %d out of sequence", cp.Partitions[i].Partition)
			}
		}
		s.topics[cmd.Name] = &cp
	case CmdSetTopicConfigs:
		t, ok := s.topics[cmd.Name]
		if !ok {
			return fmt.Errorf("%w: %s", ErrUnknownTopic, cmd.Name)
		}
		cp := *t
		cp.changedFrom, cp.changed = weak.Pointer[TopicInfo]{}, nil
		cp.Configs = maps.Clone(cmd.Configs)
		s.topics[cmd.Name] = &cp
	case CmdSetBrokerConfigs:
		if len(cmd.Configs) == 0 {
			delete(s.brokerConfigs, cmd.Name)
		} else {
			s.brokerConfigs[cmd.Name] = maps.Clone(cmd.Configs)
		}
	case CmdSetGroupConfigs:
		if len(cmd.Configs) == 0 {
			delete(s.groupConfigs, cmd.Name)
		} else {
			s.groupConfigs[cmd.Name] = maps.Clone(cmd.Configs)
		}
	case CmdShareState:
		if cmd.Share == nil {
			return fmt.Errorf("share_state without a change")
		}
		s.applyShare(cmd.Share)
	case CmdClientQuotas:
		s.applyQuotas(cmd.Quotas)
	case CmdCreateACLs, CmdDeleteACLs:
		s.applyACLs(cmd)
	case CmdScram:
		s.applyScram(cmd.Scram)
	case CmdChangePartitions:
		// Check every change before applying any, so the command is
		// all or nothing.
		for _, ch := range cmd.Changes {
			t, ok := s.topics[ch.Topic]
			if !ok {
				return fmt.Errorf("%w: %s", ErrUnknownTopic, ch.Topic)
			}
			p := ch.Next.Partition
			if p < 0 || int(p) >= len(t.Partitions) {
				return fmt.Errorf("%w: %s-%d", ErrUnknownTopic, ch.Topic, p)
			}
			if cur := t.Partitions[p].PartitionEpoch; cur != ch.ExpectPartitionEpoch {
				return fmt.Errorf("%w: %s-%d partition epoch is %d, change expected %d", ErrInvalidUpdateVersion, ch.Topic, p, cur, ch.ExpectPartitionEpoch)
			}
		}
		// Each topic changed is copied once per command, not once per
		// change: fencing a broker changes every partition it holds in
		// one command, and a copy per change made that quadratic.
		copied := map[string]*TopicInfo{}
		for _, ch := range cmd.Changes {
			cp := copied[ch.Topic]
			if cp == nil {
				t := s.topics[ch.Topic]
				c := *t
				c.Partitions = append([]PartitionInfo(nil), t.Partitions...)
				// Readers find what changed from t without comparing
				// every partition (TopicInfo.ChangedSince).
				c.changedFrom, c.changed = weak.Make(t), nil
				cp = &c
				copied[ch.Topic] = cp
				s.topics[ch.Topic] = cp
			}
			cp.Partitions[ch.Next.Partition] = ch.Next
			cp.changed = append(cp.changed, ch.Next.Partition)
		}
	case CmdFenceBroker, CmdUnfenceBroker:
		b, ok := s.brokers[cmd.BrokerID]
		if !ok {
			return fmt.Errorf("unknown broker %d", cmd.BrokerID)
		}
		b.Fenced = cmd.Type == CmdFenceBroker
		s.brokers[cmd.BrokerID] = b
	case CmdUnregisterBroker:
		if _, ok := s.brokers[cmd.BrokerID]; !ok {
			return fmt.Errorf("unknown broker %d", cmd.BrokerID)
		}
		delete(s.brokers, cmd.BrokerID)
	case CmdSetOfflineLogDirs:
		return s.applyOfflineLogDirs(cmd)
	default:
		return fmt.Errorf("unknown metadata command %q", cmd.Type)
	}
	return nil
}

// Image returns an immutable copy of the current state. Topic values are
// shared with the state, which replaces rather than mutates them.
func (s *State) Image(controllerID int32) *Image {
	im := &Image{
		ClusterID:      s.clusterID,
		ControllerID:   controllerID,
		Offset:         s.offset,
		Brokers:        maps.Clone(s.brokers),
		Topics:         maps.Clone(s.topics),
		IDs:            maps.Clone(s.ids),
		BrokerConfigs:  maps.Clone(s.brokerConfigs),
		GroupConfigs:   maps.Clone(s.groupConfigs),
		ShareGroups:    maps.Clone(s.shareGroups),
		ClientQuotas:   maps.Clone(s.clientQuotas),
		ACLs:           s.acls,
		NextProducerID: s.nextProducerID,
	}
	// Replaced, never mutated, by applyScram.
	im.ScramCredentials = maps.Clone(s.scram)
	return im
}

// snapshot is the serialised State.
type snapshot struct {
	ClusterID      string                       `json:"cluster_id"`
	Offset         int64                        `json:"offset"`
	Brokers        []BrokerInfo                 `json:"brokers"`
	Topics         []*TopicInfo                 `json:"topics"`
	BrokerConfigs  map[string]map[string]string `json:"broker_configs,omitempty"`
	NextProducerID int64                        `json:"next_producer_id,omitempty"`
	GroupConfigs   map[string]map[string]string `json:"group_configs,omitempty"`
	ShareGroups    map[string]*ShareGroupState  `json:"share_groups,omitempty"`
	ClientQuotas   []*ClientQuota               `json:"client_quotas,omitempty"`
	ACLs           []acl.Binding                `json:"acls,omitempty"`
	// Scram holds SCRAM credentials by user, then mechanism.
	Scram map[string]map[string]sasl.ScramCredential `json:"scram,omitempty"`
}

// MarshalSnapshot serialises the state.
func (s *State) MarshalSnapshot() ([]byte, error) {
	snap := snapshot{ClusterID: s.clusterID, Offset: s.offset, BrokerConfigs: s.brokerConfigs, NextProducerID: s.nextProducerID,
		GroupConfigs: s.groupConfigs, ShareGroups: s.shareGroups, ACLs: s.acls, Scram: s.scram}
	im := s.Image(-1)
	for _, id := range im.BrokerIDs() {
		snap.Brokers = append(snap.Brokers, s.brokers[id])
	}
	for _, n := range im.TopicNames() {
		snap.Topics = append(snap.Topics, s.topics[n])
	}
	snap.ClientQuotas, _ = im.DescribeClientQuotas(nil, false)
	return json.Marshal(&snap)
}

// RestoreSnapshot replaces the state with a serialised one.
func (s *State) RestoreSnapshot(b []byte) error {
	var snap snapshot
	if err := json.Unmarshal(b, &snap); err != nil {
		return fmt.Errorf("metadata snapshot: %w", err)
	}
	fresh := NewState()
	fresh.clusterID = snap.ClusterID
	fresh.offset = snap.Offset
	fresh.nextProducerID = snap.NextProducerID
	for _, b := range snap.Brokers {
		fresh.brokers[b.NodeID] = b
	}
	for _, t := range snap.Topics {
		fresh.topics[t.Name] = t
		fresh.ids[t.ID] = t.Name
	}
	for k, v := range snap.BrokerConfigs {
		fresh.brokerConfigs[k] = v
	}
	for k, v := range snap.GroupConfigs {
		fresh.groupConfigs[k] = v
	}
	for k, v := range snap.ShareGroups {
		fresh.shareGroups[k] = v
	}
	for _, cq := range snap.ClientQuotas {
		fresh.clientQuotas[cq.Entity.Key()] = cq
	}
	fresh.acls = snap.ACLs
	slices.SortFunc(fresh.acls, acl.Binding.Compare)
	fresh.acls = slices.Compact(fresh.acls)
	maps.Copy(fresh.scram, snap.Scram)
	*s = *fresh
	return nil
}
