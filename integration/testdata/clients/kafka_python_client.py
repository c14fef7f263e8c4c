"""kafka-python driver for integration/clients_test.go.

Reads one JSON request on stdin and prints one line "RESULT <json>" on stdout.
Keys, values and header values travel base64-encoded; null stays null.

Operations:
  version  the client's version and the compression codecs it has here
  produce  records to a topic (optional compression, partition)
  consume  from the beginning of listed partitions (assign), or in a group
           (subscribe), until count records arrived plus linger_ms; commit
           synchronously before closing when asked

A request's optional "security" object (protocol, mechanism, username,
password, ca) connects over SASL and/or TLS.
"""
import base64
import json
import sys
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError


def dec(s):
    return None if s is None else base64.b64decode(s)


def enc(b):
    return None if b is None else base64.b64encode(b).decode()


def result(obj):
    sys.stdout.write("RESULT " + json.dumps(obj) + "\n")
    sys.stdout.flush()


def security(spec):
    """kafka-python's security options from the request's "security"
    object (protocol, mechanism, username, password, ca): none when absent."""
    sec = spec.get("security")
    if not sec:
        return {}
    kw = {"security_protocol": sec["protocol"]}
    if sec.get("mechanism"):
        kw.update(sasl_mechanism=sec["mechanism"], sasl_plain_username=sec["username"],
                  sasl_plain_password=sec["password"])
    if sec.get("ca"):
        kw.update(ssl_cafile=sec["ca"], ssl_check_hostname=False)
    return kw


def do_produce(spec):
    codec = spec.get("compression") or "none"
    p = KafkaProducer(bootstrap_servers=spec["bootstrap"],
                      compression_type=None if codec == "none" else codec,
                      acks="all", linger_ms=5, request_timeout_ms=30000, **security(spec))
    futures = []
    for rec in spec["records"]:
        kw = {}
        if spec.get("partition", -1) >= 0:
            kw["partition"] = spec["partition"]
        futures.append(p.send(spec["topic"], key=dec(rec["key"]), value=dec(rec["value"]),
                              headers=[(k, dec(v)) for k, v in rec["headers"]], **kw))
    p.flush(45)
    for f in futures:
        f.get(timeout=45)
    p.close(10)
    return {}


def do_consume(spec):
    kw = security(spec)
    if spec.get("group"):
        kw["group_id"] = spec["group"]
    c = KafkaConsumer(bootstrap_servers=spec["bootstrap"], auto_offset_reset="earliest",
                      enable_auto_commit=False, fetch_max_wait_ms=200,
                      session_timeout_ms=10000, heartbeat_interval_ms=1000, **kw)
    if spec.get("group"):
        c.subscribe([spec["topic"]])
    else:
        tps = [TopicPartition(spec["topic"], p) for p in spec["partitions"]]
        c.assign(tps)
        c.seek_to_beginning(*tps)
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
        for tp, msgs in c.poll(timeout_ms=100).items():
            for m in msgs:
                out.append({
                    "partition": m.partition,
                    "offset": m.offset,
                    "key": enc(m.key),
                    "value": enc(m.value),
                    "headers": [[k, enc(v)] for k, v in (m.headers or [])],
                })
    if spec.get("commit") and out and "error" not in res:
        c.commit()
    c.close(autocommit=False)
    res["records"] = out
    return res


def do_version(spec):
    import kafka
    from kafka import codec
    # snappy, lz4 and zstd need optional modules (python3-snappy and others),
    # which are not installed with python3-kafka.
    have = {"gzip": codec.has_gzip(), "snappy": codec.has_snappy(),
            "lz4": codec.has_lz4(), "zstd": codec.has_zstd()}
    return {"version": kafka.__version__, "codecs": [c for c, ok in have.items() if ok]}


def main():
    spec = json.load(sys.stdin)
    try:
        res = {"produce": do_produce, "consume": do_consume,
               "version": do_version}[spec["op"]](spec)
    except KafkaError as e:
        res = {"error": repr(e), "error_name": type(e).__name__}
    result(res)


if __name__ == "__main__":
    main()
