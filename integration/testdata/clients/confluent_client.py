"""confluent-kafka (librdkafka) driver for integration/clients_test.go.

Reads one JSON request on stdin and prints one line "RESULT <json>" on stdout.
Keys, values and header values travel base64-encoded; null stays null.

Operations:
  version  the client's version and the compression codecs it has
  produce  records to a topic (optional compression, idempotence, partition)
  consume  from the beginning of listed partitions (assign), or in a group
           (subscribe), until count records arrived plus linger_ms; commit
           synchronously before closing when asked
  txn      a transactional producer running the listed transactions, each
           committed or aborted

A request's optional "config" object holds more librdkafka properties
(security.protocol, sasl.*, ssl.*) for produce and consume.
"""
import base64
import json
import sys
import time

from confluent_kafka import (OFFSET_BEGINNING, Consumer, KafkaError,
                             KafkaException, Producer, TopicPartition)


def dec(s):
    return None if s is None else base64.b64decode(s)


def enc(b):
    return None if b is None else base64.b64encode(b).decode()


def result(obj):
    sys.stdout.write("RESULT " + json.dumps(obj) + "\n")
    sys.stdout.flush()


def headers_of(rec):
    return [(k, dec(v)) for k, v in rec["headers"]] or None


def produce_all(p, spec, records, errors):
    def on_delivery(err, msg):
        if err is not None:
            errors.append(err)

    for rec in records:
        kw = {}
        if spec.get("partition", -1) >= 0:
            kw["partition"] = spec["partition"]
        while True:
            try:
                p.produce(spec["topic"], value=dec(rec["value"]), key=dec(rec["key"]),
                          headers=headers_of(rec), on_delivery=on_delivery, **kw)
                break
            except BufferError:
                p.poll(0.1)


def do_produce(spec):
    conf = {
        "bootstrap.servers": spec["bootstrap"],
        "compression.type": spec.get("compression") or "none",
        "enable.idempotence": bool(spec.get("idempotent")),
        "acks": "all",
        "linger.ms": 5,
        "message.timeout.ms": 30000,
    }
    conf.update(spec.get("config") or {})
    p = Producer(conf)
    errors = []
    produce_all(p, spec, spec["records"], errors)
    left = p.flush(45)
    if left:
        return {"error": "%d records not delivered after flush" % left}
    if errors:
        return {"error": "delivery failed: %s" % errors[0], "error_name": errors[0].name()}
    return {}


def do_consume(spec):
    conf = {
        "bootstrap.servers": spec["bootstrap"],
        "group.id": spec.get("group") or "compat-assign-only",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "isolation.level": spec.get("isolation") or "read_uncommitted",
        "session.timeout.ms": 10000,
        "fetch.wait.max.ms": 200,
    }
    conf.update(spec.get("config") or {})
    c = Consumer(conf)
    if spec.get("group"):
        c.subscribe([spec["topic"]])
    else:
        c.assign([TopicPartition(spec["topic"], p, OFFSET_BEGINNING) for p in spec["partitions"]])
    out = []
    res = {}
    deadline = time.monotonic() + spec["timeout_ms"] / 1000.0
    linger_end = None
    while True:
        now = time.monotonic()
        if len(out) >= spec["count"]:
            if linger_end is None:
                linger_end = now + spec.get("linger_ms", 0) / 1000.0
            if now >= linger_end:
                break
        elif now >= deadline:
            res["error"] = "timed out with %d of %d records" % (len(out), spec["count"])
            break
        m = c.poll(0.1)
        if m is None:
            continue
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                continue
            res["error"] = "consume: %s" % m.error()
            res["error_name"] = m.error().name()
            break
        out.append({
            "partition": m.partition(),
            "offset": m.offset(),
            "key": enc(m.key()),
            "value": enc(m.value()),
            "headers": [[k, enc(v)] for k, v in (m.headers() or [])],
        })
    if spec.get("commit") and out and "error" not in res:
        c.commit(asynchronous=False)
    c.close()
    res["records"] = out
    return res


def do_txn(spec):
    p = Producer({
        "bootstrap.servers": spec["bootstrap"],
        "transactional.id": spec["transactional_id"],
        "transaction.timeout.ms": 60000,
        "message.timeout.ms": 30000,
    })
    p.init_transactions(spec["timeout_ms"] / 1000.0)
    for tx in spec["txns"]:
        p.begin_transaction()
        errors = []
        produce_all(p, spec, tx["records"], errors)
        if tx["commit"]:
            p.commit_transaction(spec["timeout_ms"] / 1000.0)
        else:
            p.flush(30)
            p.abort_transaction(spec["timeout_ms"] / 1000.0)
        if errors:
            return {"error": "delivery failed: %s" % errors[0], "error_name": errors[0].name()}
    return {}


def do_version(spec):
    import confluent_kafka
    return {
        "version": "%s (librdkafka %s)" % (confluent_kafka.version()[0], confluent_kafka.libversion()[0]),
        # librdkafka as Debian builds it has every codec (kcat -V lists them
        # under builtin.features); the compression tests check it.
        "codecs": ["gzip", "snappy", "lz4", "zstd"],
    }


def main():
    spec = json.load(sys.stdin)
    try:
        res = {"produce": do_produce, "consume": do_consume, "txn": do_txn,
               "version": do_version}[spec["op"]](spec)
    except KafkaException as e:
        err = e.args[0] if e.args and isinstance(e.args[0], KafkaError) else None
        res = {"error": str(e), "error_name": err.name() if err else ""}
    result(res)


if __name__ == "__main__":
    main()
