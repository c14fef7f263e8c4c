package partition

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Root checkpoint files, named as in Kafka.
const (
	recoveryPointCheckpointFile = "recovery-point-offset-checkpoint"
	replicationCheckpointFile   = "replication-offset-checkpoint"
	logStartCheckpointFile      = "log-start-offset-checkpoint"
	leaderEpochCheckpointFile   = "leader-epoch-checkpoint"
	metaPropertiesFile          = "meta.properties"
	cleanShutdownFile           = ".kafka_cleanshutdown"
	tmpSuffix                   = ".tmp"
	checkpointVersion           = 0
)

// WriteFileAtomic replaces path with data so that a crash at any point
// leaves either the old or the new contents: write a temp file, fsync it,
// rename it over path, fsync the directory.
func WriteFileAtomic(fs FS, path string, data []byte) error {
	tmp := path + tmpSuffix
	f, err := fs.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := fs.Rename(tmp, path); err != nil {
		return err
	}
	return fs.SyncDir(filepath.Dir(path))
}

// readWholeFile returns the contents of name; exists is false if it is absent.
func readWholeFile(fs FS, name string) (data []byte, exists bool, err error) {
	f, err := fs.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		if ok, _, serr := fs.Stat(name); serr == nil && !ok {
			return nil, false, nil
		}
		return nil, false, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, true, err
	}
	buf := make([]byte, size)
	if _, err := f.ReadAt(buf, 0); err != nil && err != io.EOF {
		return nil, true, err
	}
	return buf, true, nil
}

// encodeOffsetCheckpoint renders Kafka's OffsetCheckpointFile format:
// "0\n<count>\n<topic> <partition> <offset>\n...".
func encodeOffsetCheckpoint(m map[TopicPartition]int64) []byte {
	tps := make([]TopicPartition, 0, len(m))
	for tp := range m {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n%d\n", checkpointVersion, len(tps))
	for _, tp := range tps {
		fmt.Fprintf(&b, "%s %d %d\n", tp.Topic, tp.Partition, m[tp])
	}
	return b.Bytes()
}

func decodeOffsetCheckpoint(data []byte) (map[TopicPartition]int64, error) {
	lines, err := checkpointLines(data)
	if err != nil {
		return nil, err
	}
	m := make(map[TopicPartition]int64, len(lines))
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) != 3 {
			return nil, fmt.Errorf("malformed checkpoint line %q", l)
		}
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		o, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("malformed checkpoint line %q", l)
		}
		m[TopicPartition{Topic: f[0], Partition: int32(p)}] = o
	}
	return m, nil
}

// checkpointLines checks the version and count header and returns the entry lines.
func checkpointLines(data []byte) ([]string, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(lines) < 2 {
		return nil, fmt.Errorf("checkpoint truncated")
	}
	if v, err := strconv.Atoi(strings.TrimSpace(lines[0])); err != nil || v != checkpointVersion {
		return nil, fmt.Errorf("unsupported checkpoint version %q", lines[0])
	}
	n, err := strconv.Atoi(strings.TrimSpace(lines[1]))
	if err != nil || n < 0 || n != len(lines)-2 {
		return nil, fmt.Errorf("checkpoint count %q does not match %d entries", lines[1], len(lines)-2)
	}
	return lines[2:], nil
}

func encodeEpochCheckpoint(entries []epochEntry) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n%d\n", checkpointVersion, len(entries))
	for _, e := range entries {
		fmt.Fprintf(&b, "%d %d\n", e.epoch, e.startOffset)
	}
	return b.Bytes()
}

func decodeEpochCheckpoint(data []byte) ([]epochEntry, error) {
	lines, err := checkpointLines(data)
	if err != nil {
		return nil, err
	}
	out := make([]epochEntry, 0, len(lines))
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) != 2 {
			return nil, fmt.Errorf("malformed epoch line %q", l)
		}
		e, err1 := strconv.ParseInt(f[0], 10, 32)
		o, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || e < 0 || o < 0 {
			return nil, fmt.Errorf("malformed epoch line %q", l)
		}
		if n := len(out); n > 0 && (int32(e) <= out[n-1].epoch || o < out[n-1].startOffset) {
			return nil, fmt.Errorf("epoch entries not increasing at %q", l)
		}
		out = append(out, epochEntry{epoch: int32(e), startOffset: o})
	}
	return out, nil
}

// parseProperties reads Java-properties "key=value" lines, ignoring
// comments; enough for meta.properties.
func parseProperties(data []byte) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || l[0] == '#' || l[0] == '!' {
			continue
		}
		if k, v, ok := strings.Cut(l, "="); ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return m
}
