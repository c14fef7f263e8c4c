package coordinator

import (
	"bytes"
	"fmt"

	"github.com/rs/zerolog"

	"github.com/gokafka/gokafka/partition"
)

// LogRecord is one record read back from an internal topic's log, a
// transaction marker (Control), or a batch that could not be read (Bad).
type LogRecord struct {
	Offset int64
	// Key and Value are the record's; Value is nil for a tombstone.
	Key, Value []byte
	// ProducerID is the producer of a transactional record or of a
	// marker, -1 for a plain record.
	ProducerID int64
	// Control marks a transaction marker for ProducerID; Commit is its
	// outcome.
	Control, Commit bool
	// Bad, when set, reports a batch at Offset whose records from the
	// malformed one on are skipped; loading goes on with the next batch.
	Bad error
}

// LoadPartition reads tp as ReadPartitionLog does, in reads of about
// loadBufferSize bytes, handing every record and marker to apply as
// ParseBatches does (records of at most loadBufferSize bytes, or their
// batch's size). It returns the offset after the last batch read, and
// false if cancel closed first.
func LoadPartition(r Replicas, tp TopicPartition, loadBufferSize int32, cancel <-chan struct{}, log zerolog.Logger, apply func(LogRecord) error) (end int64, ok bool) {
	ok = ReadPartitionLog(r, tp, loadBufferSize, cancel, log, func(chunk []byte) (int64, error) {
		next, err := ParseBatches(chunk, loadBufferSize, apply)
		end = max(end, next)
		return next, err
	})
	return end, ok
}

// ParseBatches walks the whole batches in chunk (a read of an internal
// topic's log), calling fn for every record, compressed batches included,
// once for every transaction marker, and once with Bad set for a batch
// holding a record it cannot read. Records are read with partition's
// streaming iterator, so a compressed batch costs bounded memory: each
// record may be at most maxRecordBytes, or the batch's own size if that is
// larger. It returns the offset after the last whole batch (-1 if none);
// an unreadable batch header or an error from fn stops it.
func ParseBatches(chunk []byte, maxRecordBytes int32, fn func(LogRecord) error) (next int64, err error) {
	next = -1
	for len(chunk) >= partition.BatchHeaderSize {
		h, err := partition.ParseBatchHeader(chunk)
		if err != nil {
			return next, err
		}
		size := h.Size()
		if size < partition.BatchHeaderSize || size > len(chunk) {
			break // a partial batch at the end of a read
		}
		batch := chunk[:size]
		chunk = chunk[size:]
		next = h.NextOffset()
		if h.IsControl() {
			m, _ := partition.ReadControlMarker(batch)
			if err := fn(LogRecord{Offset: h.BaseOffset, ProducerID: h.ProducerID, Control: true, Commit: m.Commit}); err != nil {
				return next, err
			}
			continue
		}
		if err := readRecords(batch, h, max(maxRecordBytes, int32(size)), fn); err != nil {
			return next, err
		}
	}
	return next, nil
}

// readRecords calls fn for each record of batch, then once with Bad set
// if a record could not be read. Only fn's errors are returned.
func readRecords(batch []byte, h partition.BatchHeader, maxRecordBytes int32, fn func(LogRecord) error) error {
	pid := int64(-1)
	if h.IsTransactional() {
		pid = h.ProducerID
	}
	it, err := partition.NewRecordIter(h, bytes.NewReader(batch[partition.BatchHeaderSize:]), maxRecordBytes, true)
	if err != nil {
		return fn(LogRecord{Offset: h.BaseOffset, ProducerID: -1, Bad: fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)})
	}
	defer it.Close()
	for it.Next() {
		r, err := it.Record()
		if err != nil {
			return fn(LogRecord{Offset: h.BaseOffset, ProducerID: -1, Bad: err})
		}
		if err := fn(LogRecord{Offset: it.Offset, Key: r.Key, Value: r.Value, ProducerID: pid}); err != nil {
			return err
		}
	}
	if err := it.Err(); err != nil {
		return fn(LogRecord{Offset: h.BaseOffset, ProducerID: -1, Bad: err})
	}
	return nil
}
