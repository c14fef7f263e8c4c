// kafkajs driver for integration/clients_test.go.
//
// Reads one JSON request on stdin and prints one line "RESULT <json>" on
// stdout. Keys, values and header values travel base64-encoded; null stays
// null. kafkajs keeps headers in an object, so a repeated header key becomes
// an array of values: repeated keys must be adjacent to keep their order.
//
// Operations:
//   version  the kafkajs version and the compression codecs it has
//   produce  records to a topic (optional compression, idempotence, partition)
//   consume  in a group (a throwaway one when none is given) from the
//            beginning, until count records arrived plus linger_ms; commit
//            the consumed offsets before disconnecting when asked
'use strict'

const { Kafka, CompressionTypes, logLevel } = require('kafkajs')

const dec = (s) => (s === null || s === undefined ? null : Buffer.from(s, 'base64'))
const enc = (b) => (b === null || b === undefined ? null : Buffer.from(b).toString('base64'))
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

function result(obj) {
  process.stdout.write('RESULT ' + JSON.stringify(obj) + '\n')
}

function readStdin() {
  return new Promise((resolve, reject) => {
    const chunks = []
    process.stdin.on('data', (c) => chunks.push(c))
    process.stdin.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))))
    process.stdin.on('error', reject)
  })
}

const codecs = {
  none: CompressionTypes.None,
  gzip: CompressionTypes.GZIP,
  snappy: CompressionTypes.Snappy,
  lz4: CompressionTypes.LZ4,
  zstd: CompressionTypes.ZSTD,
}

// A request's optional security object (protocol, mechanism, username,
// password, ca) connects over SASL and/or TLS.
function security(spec) {
  const sec = spec.security
  if (!sec) return {}
  const out = {}
  if (sec.protocol === 'SSL' || sec.protocol === 'SASL_SSL') {
    out.ssl = sec.ca ? { ca: [require('fs').readFileSync(sec.ca, 'utf8')] } : true
  }
  if (sec.mechanism) {
    out.sasl = { mechanism: sec.mechanism.toLowerCase(), username: sec.username, password: sec.password }
  }
  return out
}

function client(spec) {
  return new Kafka({
    ...security(spec),
    clientId: 'gokafka-compat',
    brokers: [spec.bootstrap],
    logLevel: logLevel.ERROR,
    retry: { initialRetryTime: 100, retries: 8 },
  })
}

async function produce(spec) {
  const producer = client(spec).producer({
    idempotent: !!spec.idempotent,
    maxInFlightRequests: spec.idempotent ? 1 : undefined,
    allowAutoTopicCreation: false,
  })
  await producer.connect()
  try {
    const messages = spec.records.map((r) => {
      const headers = {}
      for (const [k, v] of r.headers) {
        if (k in headers) {
          headers[k] = [].concat(headers[k], dec(v))
        } else {
          headers[k] = dec(v)
        }
      }
      const m = { key: dec(r.key), value: dec(r.value), headers }
      if (spec.partition !== undefined && spec.partition >= 0) m.partition = spec.partition
      return m
    })
    const codec = codecs[spec.compression || 'none']
    if (codec === undefined) throw new Error('unknown codec ' + spec.compression)
    await producer.send({ topic: spec.topic, acks: -1, compression: codec, messages })
  } finally {
    await producer.disconnect()
  }
  return {}
}

async function consume(spec) {
  const groupId = spec.group || 'compat-throwaway-' + process.pid + '-' + Date.now()
  const consumer = client(spec).consumer({
    groupId,
    readUncommitted: spec.isolation !== 'read_committed',
    maxWaitTimeInMs: 200,
    sessionTimeout: 10000,
    heartbeatInterval: 1000,
  })
  const out = []
  const next = {} // partition -> next offset to commit
  let crashed = null
  consumer.on(consumer.events.CRASH, (e) => {
    crashed = e.payload.error
  })
  await consumer.connect()
  const res = {}
  try {
    await consumer.subscribe({ topic: spec.topic, fromBeginning: true })
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        const headers = []
        for (const [k, v] of Object.entries(message.headers || {})) {
          for (const one of Array.isArray(v) ? v : [v]) headers.push([k, enc(one)])
        }
        out.push({
          partition,
          offset: Number(message.offset),
          key: enc(message.key),
          value: enc(message.value),
          headers,
        })
        next[partition] = (BigInt(message.offset) + 1n).toString()
      },
    })
    const deadline = Date.now() + spec.timeout_ms
    while (out.length < spec.count && Date.now() < deadline && !crashed) await sleep(20)
    if (crashed) {
      res.error = 'consumer crashed: ' + crashed
    } else if (out.length < spec.count) {
      res.error = `timed out with ${out.length} of ${spec.count} records`
    } else {
      await sleep(spec.linger_ms || 0)
      if (spec.commit) {
        await consumer.commitOffsets(
          Object.entries(next).map(([p, offset]) => ({ topic: spec.topic, partition: Number(p), offset })),
        )
      }
    }
  } finally {
    await consumer.disconnect()
  }
  res.records = out
  return res
}

async function version() {
  // Snappy, LZ4 and ZSTD need codec packages kafkajs does not ship.
  return { version: require('kafkajs/package.json').version, codecs: ['gzip'] }
}

async function main() {
  const spec = await readStdin()
  let res
  try {
    res = await { produce, consume, version }[spec.op](spec)
  } catch (e) {
    res = { error: String(e && e.stack ? e.stack : e), error_name: (e && e.type) || (e && e.name) || '' }
  }
  result(res)
  process.exit(0)
}

main()
