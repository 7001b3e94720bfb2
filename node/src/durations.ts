/**
 * Durations and rates, typed so that a misspelled unit does not compile.
 *
 * A duration is units from largest to smallest, each at most once:
 * `w d h m s ms` (`'15m'`, `'30d'`, `'1h30m'`, `'2w3d'`), or a number of
 * milliseconds. A rate is a count, a slash and a span: `'5/m'`,
 * `'100/5h'`, `'300/7d'`. The engine parses both; these types only let
 * the compiler catch `'15min'` or `'30m1h'` before a test does.
 *
 * @module
 */

/** A unit of a duration: weeks, days, hours, minutes, seconds, milliseconds. */
export type DurationUnit = 'w' | 'd' | 'h' | 'm' | 's' | 'ms'

type Part<U extends DurationUnit> = '' | `${bigint}${U}`

/** A duration as text: `'15m'`, `'30d'`, `'1h30m'`, units largest first, each once. */
export type DurationText = Exclude<
	`${Part<'w'>}${Part<'d'>}${Part<'h'>}${Part<'m'>}${Part<'s'>}${Part<'ms'>}`,
	''
>

/** A duration: text as `'15m'` or `'1h30m'`, or a number of milliseconds. */
export type Duration = DurationText | number

/** A rate: a count per span, as `'5/m'`, `'100/5h'` or `'300/7d'`. */
export type Rate = `${bigint}/${DurationUnit}` | `${bigint}/${DurationText}`
