package partition

import (
	"crypto/md5"
	"encoding/binary"
)

// offsetMap maps a record key to the offset of its latest record, the
// cleaner's dedupe map (Kafka's SkimpyOffsetMap): keys are stored as their
// 16-byte MD5 hash next to an 8-byte offset, 24 bytes a slot, in one
// fixed buffer sized by log.cleaner.dedupe.buffer.size, so its memory is
// bounded whatever the keys. Two keys with the same MD5 are taken for one,
// as in Kafka. It is filled only up to the load factor
// (log.cleaner.io.buffer.load.factor); the cleaner stops reading dirty
// batches there and cleans what it has, in as many passes as it takes.
type offsetMap struct {
	slots   []byte // slots*24 bytes: hash (16), offset+1 (8; 0 = empty)
	n       int    // slots
	used    int
	maxUsed int // entries allowed before the map counts as full
}

const offsetMapSlot = md5.Size + 8

// newOffsetMap returns a map in bufferBytes of memory, to be filled to
// loadFactor. It always has room for at least one entry.
func newOffsetMap(bufferBytes int64, loadFactor float64) *offsetMap {
	n := max(int(bufferBytes/offsetMapSlot), 2)
	m := &offsetMap{slots: make([]byte, n*offsetMapSlot), n: n}
	m.maxUsed = max(int(float64(n)*loadFactor), 1)
	m.maxUsed = min(m.maxUsed, n-1) // one slot stays free so probing ends
	return m
}

func (m *offsetMap) size() int { return m.used }

// room reports how many more entries the map accepts.
func (m *offsetMap) room() int { return m.maxUsed - m.used }

func (m *offsetMap) clear() {
	clear(m.slots)
	m.used = 0
}

// find returns the slot of hash h: where it is, or the empty slot where it
// would go (open addressing, linear probing from the hash's first bytes).
func (m *offsetMap) find(h *[md5.Size]byte) int {
	i := int(binary.BigEndian.Uint64(h[:8]) % uint64(m.n))
	for {
		s := m.slots[i*offsetMapSlot : (i+1)*offsetMapSlot]
		if binary.BigEndian.Uint64(s[md5.Size:]) == 0 || string(s[:md5.Size]) == string(h[:]) {
			return i
		}
		i++
		if i == m.n {
			i = 0
		}
	}
}

// put records that key's latest record is at offset. The caller checks
// room first; put on a full map of a new key is ignored.
func (m *offsetMap) put(key []byte, offset int64) {
	h := md5.Sum(key)
	i := m.find(&h)
	s := m.slots[i*offsetMapSlot : (i+1)*offsetMapSlot]
	if binary.BigEndian.Uint64(s[md5.Size:]) == 0 {
		if m.used >= m.maxUsed {
			return
		}
		m.used++
		copy(s, h[:])
	}
	binary.BigEndian.PutUint64(s[md5.Size:], uint64(offset+1))
}

// get returns the latest offset recorded for key, or -1.
func (m *offsetMap) get(key []byte) int64 {
	h := md5.Sum(key)
	i := m.find(&h)
	return int64(binary.BigEndian.Uint64(m.slots[i*offsetMapSlot+md5.Size:])) - 1
}
