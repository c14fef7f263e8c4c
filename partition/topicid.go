package partition

import (
	"encoding/base64"
	"fmt"
	"path/filepath"
	"strings"
	"unique"
)

// partitionMetadataFile records which topic (by id) a partition directory
// belongs to, in Kafka's format, so that a log left behind by a deleted
// topic is never served as the data of a new topic with the same name.
const partitionMetadataFile = "partition.metadata"

// TopicID returns the topic id recorded in the partition directory, and
// false if none is recorded.
func (l *Log) TopicID() ([16]byte, bool, error) {
	var id [16]byte
	l.createMu.Lock()
	if l.lazy.Load() {
		h := l.topicID
		l.createMu.Unlock()
		if h == (unique.Handle[[16]byte]{}) {
			return id, false, nil
		}
		return h.Value(), true, nil
	}
	l.createMu.Unlock()
	data, ok, err := readWholeFile(l.env.fs, filepath.Join(l.dir(), partitionMetadataFile))
	if err != nil || !ok {
		return id, false, err
	}
	var enc string
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "topic_id" {
			enc = strings.TrimSpace(v)
		}
	}
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || len(raw) != 16 {
		return id, false, fmt.Errorf("%s: invalid topic_id %q", partitionMetadataFile, enc)
	}
	copy(id[:], raw)
	return id, true, nil
}

// SetTopicID records the topic id of the partition directory (atomically,
// fsynced). A lazy log keeps it in memory until its files are created.
func (l *Log) SetTopicID(id [16]byte) error {
	l.createMu.Lock()
	if l.lazy.Load() {
		l.topicID = unique.Make(id)
		l.createMu.Unlock()
		return nil
	}
	l.createMu.Unlock()
	return WriteFileAtomic(l.env.fs, filepath.Join(l.dir(), partitionMetadataFile), topicIDFileData(id))
}

// topicIDFileData is partition.metadata's content for the topic id.
func topicIDFileData(id [16]byte) []byte {
	return []byte(fmt.Sprintf("version: 0\ntopic_id: %s\n", base64.RawURLEncoding.EncodeToString(id[:])))
}
