// Package partition owns the on-disk log of each partition a broker holds:
// segments, their indexes, append, read, truncation, crash recovery,
// retention, HW/LEO/log-start bookkeeping and the leader-epoch cache.
//
// # What it must not touch
//
// No network, no Kafka protocol types: kmsg stays in protocol/ and handlers/
// (tests may use it). Callers hand in record-batch bytes; this package
// parses the v2 batch header itself. It does not decide who is leader, what
// the HW should be, or what a producer's sequence state is; it stores what
// replication/ and idempotent/ tell it. Disk access goes only through FS.
//
// # On disk (Kafka's layout)
//
//	<log.dir>/meta.properties                      version=1, cluster.id, node.id, directory.id
//	<log.dir>/recovery-point-offset-checkpoint     "0\n<n>\n<topic> <partition> <offset>\n..."
//	<log.dir>/replication-offset-checkpoint        same format, the HW
//	<log.dir>/log-start-offset-checkpoint          same format
//	<log.dir>/cleaner-offset-checkpoint            same format: where the cleaner stopped per compacted log
//	<log.dir>/.kafka_cleanshutdown                 present only while stopped cleanly
//	<log.dir>/<topic>-<partition>/
//	    <20-digit base offset>.log                 record batches as clients sent them
//	    <20-digit base offset>.index               8-byte entries: relative offset, position (uint32 BE)
//	    <20-digit base offset>.timeindex           12-byte entries: timestamp int64, relative offset uint32
//	    leader-epoch-checkpoint                    "0\n<n>\n<epoch> <start offset>\n..."
//	    <20-digit end offset>.snapshot             producer state up to that offset (idempotent's format)
//	    <base>.log.cleaned, .log.swap, .log.deleted a cleaned segment being written, swapped in, replaced (cleaner.go)
//	<log.dir>/<topic>-<partition>.<id>-delete/     a deleted partition, removed at startup
//
// A partition new to the broker has no directory until its first append
// (lazy.go): the Manager opens its log empty in memory, the first append
// creates the directory, segment and partition.metadata (no fsync), and
// the first flush round makes the new directory durable before the
// recovery point passes a batch. Checkpoints leave such logs out; a
// restart finds the partition without a directory and takes it up as new.
//
// Appends rewrite only baseOffset and partitionLeaderEpoch, which the CRC
// does not cover; with message.timestamp.type=LogAppendTime they also set
// the timestamp-type bit and MaxTimestamp and recompute the CRC, exactly as
// Kafka's DefaultRecordBatch.setMaxTimestamp does. Nothing is decompressed
// on the produce or fetch path; only ListOffsets-by-timestamp and the
// coordinators loading their internal topics look inside a batch, through
// RecordIter (records.go), which streams the records
// through the decoder and refuses a batch that expands past its declared
// record count times max.message.bytes (at most 256 MiB) as
// CORRUPT_MESSAGE, so a decompression bomb costs bounded memory and CPU.
//
// The v2 batch format is written here too: BatchBuilder (builder.go)
// encodes records (key, value, headers, timestamp deltas, producer id,
// epoch and sequence, the transactional and control flags, the CRC) for
// every writer that builds batches itself (the group and transaction
// coordinators, transaction markers: ControlBatch), and ReadControlMarker
// reads a marker back.
//
// Index entries point at batch starts: the offset index maps a batch's
// base offset to its position, one entry once index.interval.bytes have
// been written since the last; the time index records (max timestamp so
// far, base offset of the batch that reached it) at the same moments and
// when a segment stops being active, so an inactive segment's last time
// entry is its max timestamp. Unlike Kafka, index files are not
// preallocated and memory-mapped: the entries live in memory and the files
// are append-only copies written by open-append-close (index.go) when the
// log is flushed, a truncation is made durable or the log is closed, so a
// segment holds one descriptor (its log file), there is nothing to trim on
// close, and a torn index is simply a short file. Loading extends an index
// that lags its log over the tail it scans and rebuilds a missing one.
// segment.index.bytes still bounds them and rolls the segment when full.
//
// Checkpoints are written to "<name>.tmp", fsynced, renamed over the old
// file, and the directory is fsynced; a crash leaves the old or the new one.
//
// # Durability and recovery
//
// The recovery point is the offset below which everything is fsynced. A
// flush round (Log.Flush) syncs the directory if segments were created,
// then every segment from the one holding recoveryPoint-1 to the active
// one (indexes too, written out first; the active segment's are written
// but not synced, recovery rebuilds them), writes the epoch
// checkpoint first if it changed, and only then raises the recovery point.
// After an unclean shutdown, Open re-reads every segment from the one
// holding recoveryPoint-1: each batch's frame, magic, CRC and offsets are
// checked, the file is cut at the first bad batch (a torn tail, or
// corruption: both are truncated and logged, as Kafka does), later
// segments are deleted, indexes are rebuilt and the epoch cache is refilled
// from the batches. Segments below that, and all segments after a clean
// shutdown, only get an index sanity check and a scan of the tail after the
// last index entry; one failing it is recovered the same way. Producer
// snapshots above the recovered end are deleted.
//
// An append is all or nothing: if the log write fails, the segment's file
// is cut back to its in-memory state (and, should that fail too, cut back
// before the next write); index entries are added in memory only, so an
// index write that fails fails the flush instead, and the recovery point
// stays. A roll or full truncation
// creates the new segment before removing old ones, so a failure leaves the
// log unchanged and never without a segment.
//
// Truncation (TruncateTo, TruncateFullyAndStartAt) is durable when it
// returns, so that a follower never fetches past a truncation a power loss
// could undo: producer snapshots above the new end are deleted, then the
// directory, the cut segment and the leader-epoch checkpoint are synced and
// the Manager rewrites the root checkpoints if their recovery point may be
// above the new end (it tracks what it last wrote; a follower usually
// truncates only what it has not flushed, and then nothing is written). A truncation whose sync failed stays pending:
// the next truncation call or append completes it first, and segment files
// it could not remove are removed then. Deleting a log rewrites the root
// checkpoints too, so that a log recreated under the same name never
// inherits its offsets; so does opening the Manager when they name
// partitions whose directory is gone.
//
// # Concurrency
//
// Each Log has, in lock order:
//
//	createMu          creation of a lazy log's files (ensureFiles, taken by
//	                  the first append before any other lock of the log;
//	                  no fsync under it), Delete and the topic id. A log
//	                  dir's dirSyncer.mu (lazy.go), which group-commits the
//	                  log dir's sync for new logs' first flushes, is a leaf
//	                  taken with no lock of any log held.
//	lifeMu (RWMutex)  lifetime of segment files. Shared: Read,
//	                  OffsetForTimestamp, a flush round's fsyncs. Exclusive:
//	                  TruncateTo, TruncateFullyAndStartAt, DeleteRecordsBefore,
//	                  ApplyRetention, Close, Delete.
//	ckMu              serialises leader-epoch-checkpoint writes.
//	fl                group-commit state: at most one flush round at a time;
//	                  callers arriving during a round wait and are served by
//	                  the next one. Never held during I/O.
//	mu                everything else: segment list and sizes, LEO, HW, log
//	                  start, recovery point, epoch cache, config. Methods that
//	                  need it held end in "Locked".
//	index.ioMu        one per index file: its name and what the file holds.
//	                  Taken after mu (or without it); mu is never taken
//	                  while holding it. Held across the file's open,
//	                  write or truncate and close, never across an fsync.
//
// fl is taken before mu and never together with lifeMu. Append and
// AppendAsFollower hold only mu, including for the write(2) into the page
// cache (after completing a pending truncation, without mu, if one is); Read snapshots (segment, size, index) under mu and does its I/O
// without it, so reads run concurrently with appends. No lock is held across
// fsync except lifeMu shared, which only delays truncation and deletion.
//
// Invariants (under mu, while open): the segment list is non-empty and
// sorted; segs[0].base <= logStart <= hw <= leo; recoveryPoint <= leo;
// the epoch cache is strictly increasing in epoch and non-decreasing in
// start offset, and holds no entry at or beyond the LEO.
//
// # Failing disks
//
// Each log dir reaches the disk through its own wrapper of FS (logdir.go).
// The first I/O error there takes the whole dir offline (Kafka's
// LogDirFailureChannel): every later operation on it fails with ErrStorage
// without reaching the disk, so a failed fsync is never retried; its logs
// are closed and GetOrCreate answers ErrStorage for their partitions;
// checkpoints and Close skip it (no clean-shutdown marker, so the next start
// recovers it). The check runs under whatever Log lock the failing
// operation holds and takes none of its own but failMu, a leaf; closing the
// logs (Manager.mu, then each Log's lifeMu and mu) and the failure handler
// run on a goroutine of their own.
//
// # Compaction
//
// Logs whose cleanup.policy includes compact are cleaned by the
// Manager's cleaner threads (cleaner.go, cleaner_manager.go), Kafka's
// LogCleaner: a bounded key map (offsetmap.go) over the dirty section,
// segments re-copied in groups into ".cleaned" files and swapped in
// through ".swap" files, which Open completes after a crash (a ".swap"
// log replaces every segment in its offset range). A cleaning reads
// segments through snapshots taken under mu, like Read; it takes mu only
// for each swap's renames and list change, and abandons a swap if a
// truncation, retention or DeleteRecords changed the segments since
// (cleanGen). Replaced segments are retired as in retention: their
// handles stay open until readers holding lifeMu shared are done.
// Batches with fewer records than offsets, or none, are what compaction
// leaves: AppendAsFollower accepts them (ValidateReplicatedBatches).
//
// The Manager runs one background goroutine (Start) for retention,
// flush.ms and the root checkpoints, and opens logs in parallel at startup.
// Its locks: ckMu (one root checkpoint write at a time) → mu → a Log's mu,
// taken by checkpoint writes, including the one at the end of a truncation,
// which runs with no lock of that Log held. Close waits for logs being
// created before it closes them and writes the clean-shutdown marker.
package partition
