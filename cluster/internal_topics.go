package cluster

// Internal topics hold state only the brokers write: group offsets and
// metadata (__consumer_offsets) and transaction state
// (__transaction_state). gokafka keeps share-group state in the metadata
// quorum, so it has no __share_group_state topic.
var internalTopics = map[string]bool{
	"__consumer_offsets":  true,
	"__transaction_state": true,
}

// IsInternalTopic reports whether name is one of the internal topics.
func IsInternalTopic(name string) bool { return internalTopics[name] }
