/**
 * The engine's warnings (memory at 80%, a full memory refusing new keys, a
 * failed maintenance, a config value left out, a failed release of a
 * `once` claim) as records for the program's own logging.
 *
 * By default a warning or an error is a process warning
 * (`process.emitWarning`, of type `TinyStoreWarning`), which Node and Bun
 * print once to stderr and a program can listen for with
 * `process.on('warning', ...)`. `onLog` sends every record to a handler
 * instead:
 *
 * ```ts
 * import { onLog } from 'tinystore'
 *
 * onLog((r) => logger[r.level]({ target: r.target }, r.message))
 * ```
 *
 * @module
 */

import { native } from './native'

/** One record of the engine's log. */
export interface LogRecord {
	/** How grave it is. */
	level: 'error' | 'warn' | 'info'
	/** What wrote it, as a path of the engine's modules (`tinystore::config`). */
	target: string
	/** What happened, for a person. */
	message: string
}

/** What `onLog` is given. */
export type LogHandler = (record: LogRecord) => void

/** The default: warnings and errors as process warnings; information dropped. */
function emitWarning(record: LogRecord): void {
	if (record.level !== 'info') process.emitWarning(record.message, { type: 'TinyStoreWarning', code: record.target })
}

let handler: LogHandler = emitWarning

/** Sends every record of the engine's log to `h` from now on; `undefined` gives the default back. */
export function onLog(h: LogHandler | undefined): void {
	handler = h ?? emitWarning
}

native.forwardLogs(([level, target, message]) => {
	handler({ level: level as LogRecord['level'], target, message })
})
