// The values of the language-neutral cases (conformance and interchange) as
// the TypeScript package takes and gives them: shared by the Node/Bun runner
// and the Node/Bun agent, as tests/conformance/rust/src/lib.rs is by Rust's.
// See tests/conformance/README.md, "Values by type".

/**
 * Parses case JSON, keeping an integer literal past 2^53 exact as a bigint
 * (`JSON.parse` would round 9223372036854775000 to a neighbour), so that a
 * case's counter steps and answers reach the API as the case wrote them.
 */
export function parseJson(text) {
	let i = 0
	const fail = (what) => {
		throw new SyntaxError(`case JSON: ${what} at offset ${i}`)
	}
	const space = () => {
		while (i < text.length && ' \t\r\n'.includes(text[i])) i++
	}
	const value = () => {
		space()
		const c = text[i]
		if (c === '{') {
			i++
			const o = {}
			space()
			if (text[i] === '}') return i++, o
			for (;;) {
				space()
				if (text[i] !== '"') fail('a key')
				const k = string()
				space()
				if (text[i++] !== ':') fail('a colon')
				o[k] = value()
				space()
				if (text[i] === ',') i++
				else if (text[i] === '}') return i++, o
				else fail('a comma or }')
			}
		}
		if (c === '[') {
			i++
			const a = []
			space()
			if (text[i] === ']') return i++, a
			for (;;) {
				a.push(value())
				space()
				if (text[i] === ',') i++
				else if (text[i] === ']') return i++, a
				else fail('a comma or ]')
			}
		}
		if (c === '"') return string()
		for (const [word, v] of [['true', true], ['false', false], ['null', null]]) {
			if (text.startsWith(word, i)) return (i += word.length), v
		}
		const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400))
		if (!m) fail('a value')
		i += m[0].length
		if (m[2] === undefined && m[3] === undefined) {
			const n = BigInt(m[0])
			if (n > BigInt(Number.MAX_SAFE_INTEGER) || n < -BigInt(Number.MAX_SAFE_INTEGER)) return n
		}
		return Number(m[0])
	}
	const string = () => {
		const start = i
		i++
		while (text[i] !== '"') {
			if (i >= text.length) fail('the end of a string')
			i += text[i] === '\\' ? 2 : 1
		}
		i++
		return JSON.parse(text.slice(start, i))
	}
	const v = value()
	space()
	if (i !== text.length) fail('the end')
	return v
}

/** Bytes from hex. */
export function fromHex(hex) {
	const out = new Uint8Array(hex.length / 2)
	for (let j = 0; j < out.length; j++) out[j] = parseInt(hex.slice(2 * j, 2 * j + 2), 16)
	return out
}

/** Hex of bytes, for comparisons and messages. */
export function toHex(bytes) {
	return Buffer.from(bytes).toString('hex')
}

/** A key or owner of a case as text: a string, `{ repeat, times }`, or an integer. */
export function text(v) {
	if (typeof v === 'string') return v
	if (typeof v === 'number' || typeof v === 'bigint') return String(v)
	if (v && typeof v === 'object' && 'repeat' in v) return v.repeat.repeat(v.times)
	throw new Error(`not a key or owner: ${JSON.stringify(v)}`)
}

/**
 * A key or owner of a case as the API takes it: an integer stays a number
 * (so `42` exercises the package's integer keys), the rest is text.
 */
export function keyArg(v) {
	return typeof v === 'number' || typeof v === 'bigint' ? v : text(v)
}

/** A key the package gave back (text, or bytes that are not UTF-8) as text, as Rust's `lossy`. */
export function lossy(k) {
	return typeof k === 'string' ? k : new TextDecoder().decode(k)
}

const UNITS = { w: 604_800_000, d: 86_400_000, h: 3_600_000, m: 60_000, s: 1_000, ms: 1 }

/** Milliseconds of a case's duration text (`'15m'`, `'28d12h'`), to compare with times the API answers. */
export function millis(d) {
	let ms = 0
	for (const [, n, unit] of d.matchAll(/(\d+)(ms|w|d|h|m|s)/g)) ms += Number(n) * UNITS[unit]
	return ms
}

/**
 * A float of a case: a number, `{ float: '-0' | 'NaN' | 'Infinity' | '-Infinity' }`,
 * or `{ bits }`. A NaN with a payload is marked `js: 'NaN'`: JS numbers do not
 * carry NaN payloads (tests/conformance/README.md, "NaN in JavaScript"), so
 * JS writes it as `NaN`, the NaN every JS engine holds.
 */
export function float(v) {
	if (typeof v === 'number') return v
	if ('bits' in v && v.js === 'NaN') return Number.NaN
	if ('bits' in v) return new DataView(new BigUint64Array([BigInt(`0x${v.bits}`)]).buffer).getFloat64(0, true)
	const named = { '-0': -0, NaN: Number.NaN, Infinity: Number.POSITIVE_INFINITY, '-Infinity': Number.NEGATIVE_INFINITY }
	if (!(v.float in named)) throw new Error(`unknown float ${v.float}`)
	return named[v.float]
}

/** The bits of a float as hex, to compare bit for bit. */
export function floatBits(f) {
	const dv = new DataView(new ArrayBuffer(8))
	dv.setFloat64(0, f)
	return dv.getBigUint64(0).toString(16).padStart(16, '0')
}

/**
 * The package's `type` option for a case's value type, and for a value past
 * 2^53 (`{ int }`, `{ uint64 }`) the `bigint` type that holds it.
 */
export function packageType(ty, big = false) {
	switch (ty) {
		case 'string':
		case 'bytes':
		case 'float':
		case 'bool':
		case 'json':
		case 'set':
			return ty
		case 'int':
			return big ? 'bigint' : 'int'
		case 'uint64':
			return 'bigint'
		default:
			throw new Error(`unknown value type ${ty}`)
	}
}

/** Whether a case's value of `ty` needs the `bigint` type (an integer written as `{ int }` or `{ uint64 }`). */
export function isBig(ty, v) {
	return (ty === 'int' || ty === 'uint64') && v !== null && typeof v === 'object'
}

/** A value of a case as the package takes it for a bucket of `packageType(ty, isBig(ty, v))`. */
export function toJs(ty, v) {
	switch (ty) {
		case 'string':
			return text(v)
		case 'bytes': {
			const unit = fromHex(v.hex)
			const times = v.times ?? 1
			const out = new Uint8Array(unit.length * times)
			for (let j = 0; j < times; j++) out.set(unit, j * unit.length)
			return out
		}
		case 'int':
			if (typeof v === 'number') return v
			if (typeof v === 'bigint') return v
			return BigInt(v.int)
		case 'uint64':
			return BigInt(v.uint64)
		case 'float':
			return float(v)
		case 'bool':
			if (typeof v !== 'boolean') throw new Error(`not a bool: ${v}`)
			return v
		case 'json':
			return v
		case 'set':
			if (v !== null) throw new Error(`a set member has no value, not ${JSON.stringify(v)}`)
			return null
		default:
			packageType(ty)
			throw new Error(`no value of type ${ty}`)
	}
}

/** Compares JSON values by value (object keys in any order), as serde_json's `Value` does. */
export function sameJson(a, b) {
	if (a === b) return true
	if (typeof a === 'number' && typeof b === 'number') return a === b
	if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, j) => sameJson(x, b[j]))
	if (a && b && typeof a === 'object' && typeof b === 'object' && !Array.isArray(b)) {
		const ka = Object.keys(a)
		return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && sameJson(a[k], b[k]))
	}
	return false
}

/** Whether a value the package gave back is a case's expected value of `ty` (floats bit for bit). */
export function sameValue(ty, expected, got) {
	switch (ty) {
		case 'json':
			return sameJson(expected, got)
		case 'float': {
			if (typeof expected === 'object' && 'bits' in expected && expected.js === 'NaN') {
				// The JS promise for a NaN with a payload: it reads as NaN (its payload is not a JS value).
				return typeof got === 'number' && Number.isNaN(got)
			}
			const want = float(expected)
			if (typeof expected === 'object' && 'bits' in expected && floatBits(want) !== expected.bits.toLowerCase()) {
				// A NaN payload not marked js: 'NaN' asks of JS what its numbers cannot keep (Bun makes every NaN 7ff8000000000000).
				throw new Error(`this runtime cannot hold the float bits ${expected.bits}: its numbers keep only ${floatBits(want)}; a case marks such a NaN js: 'NaN'`)
			}
			return typeof got === 'number' && floatBits(got) === floatBits(want)
		}
		case 'bytes':
			return got instanceof Uint8Array && toHex(got) === toHex(toJs(ty, expected))
		case 'int':
		case 'uint64': {
			const want = toJs(ty, expected)
			return (typeof got === 'number' || typeof got === 'bigint') && BigInt(got) === BigInt(want) && typeof got === typeof want
		}
		default:
			return got === toJs(ty, expected)
	}
}

/** A short text of a value the package gave back, for failure messages. */
export function show(v) {
	if (v === undefined) return 'undefined'
	if (v instanceof Uint8Array) return `bytes ${toHex(v.subarray(0, 40))}${v.length > 40 ? `… (${v.length})` : ''}`
	if (typeof v === 'bigint') return `${v}n`
	if (typeof v === 'number' && Number.isNaN(v)) return `NaN(${floatBits(v)})`
	if (Object.is(v, -0)) return '-0'
	const s = typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v, (_, x) => (typeof x === 'bigint' ? `${x}n` : x))
	return s && s.length > 80 ? `${s.slice(0, 80)}… (${s.length})` : String(s)
}
