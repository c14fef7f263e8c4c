package coordinator

import "math"

// javaStringHashCode is Java's String.hashCode: s[0]*31^(n-1) + ... + s[n-1]
// over UTF-16 code units, in int32 arithmetic that wraps.
func javaStringHashCode(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			// A supplementary character is two UTF-16 code units.
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// PartitionFor is the partition of an internal topic with numPartitions
// partitions that a key maps to: the __consumer_offsets partition of a
// group id, the __transaction_state partition of a transactional id. Kafka
// computes both as Utils.abs(key.hashCode) % numPartitions, where
// Utils.abs is Math.abs except that Integer.MIN_VALUE maps to 0 (not the
// n & 0x7fffffff of Utils.toPositive, which the producer's partitioner
// uses). Clients and operators rely on this mapping being identical to
// Kafka's, e.g. to find which partition holds a group's offsets.
func PartitionFor(key string, numPartitions int32) int32 {
	h := javaStringHashCode(key)
	switch {
	case h == math.MinInt32:
		h = 0
	case h < 0:
		h = -h
	}
	return h % numPartitions
}
