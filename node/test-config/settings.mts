// The schema the KV-20 tests and their second process share.
import { field } from 'tinystore'

export const schema = {
	port: field.int(8080),
	host: field.str('localhost'),
	ratio: field.float(0.5),
	debug: field.bool(false),
	timeout: field.duration('30s'),
	hosts: field.list('str', []),
	extra: field.json<Record<string, unknown>>({}),
	limits: { rps: field.int(100), burst: field.int(20) },
	token: field.str('dev-token', { secret: true }),
}
