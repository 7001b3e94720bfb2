/*
 * tinystore.h: the C ABI of TinyStore KV (crate tinystore-c, libtinystore.a).
 *
 * Kept in step with bindings/c/src by hand; the crate's unit test
 * header_check fails when a function, struct, field or constant differs.
 *
 * Conventions:
 * - Handles are opaque and freed by their *_free function.
 * - A fallible function returns TS_OK (0) or an error code; when `err` is not
 *   null it then holds a TsError to read with ts_error_view and free with
 *   ts_error_free.
 * - Text and bytes come in as a pointer and a length, read during the call
 *   only; null with length 0 is empty. Text is UTF-8.
 * - Bytes going out in a TsValue or TsEntry of ts_bucket_get, _take and
 *   _create are the caller's: free them with ts_bytes_free. Those of a page
 *   belong to the page.
 * - Writes block until durable; a TsCancel fired from another thread gives
 *   up on a write whose group has not started, or on the wait of
 *   ts_once_begin (TS_CANCELLED).
 * - Link with: libtinystore.a -lm -ldl -lpthread
 */
#ifndef TINYSTORE_H
#define TINYSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes: one table for every language. */
#define TS_OK 0
#define TS_INVALID 1
#define TS_LIMIT 2
#define TS_CONFLICT 3
#define TS_CORRUPT 4
#define TS_CLOSED 5
#define TS_OUTCOME_UNKNOWN 6
#define TS_IO 7
#define TS_CANCELLED 8

/* Value kinds: how a value crosses, and how a row is asked to read. */
#define TS_KIND_NULL 0    /* nothing: a set member */
#define TS_KIND_INT 1     /* integer */
#define TS_KIND_BYTES 2   /* bytes */
#define TS_KIND_TEXT 3    /* UTF-8 text in bytes */
#define TS_KIND_BOOL 4    /* 0 or 1 in integer */
#define TS_KIND_FLOAT 5   /* the bits of a double in integer */
#define TS_KIND_FLOAT32 6 /* the bits of a float in integer */
#define TS_KIND_UINT64 7  /* the bits of a uint64_t in integer */
#define TS_KIND_JSON 8    /* JSON text in bytes */
#define TS_KIND_RAW 9     /* reading only: the row as kept (NULL, INT or BYTES) */

/* Quotas. */
#define TS_MAX_WINDOWS 8
#define TS_QUOTA_ALLOW 0  /* count n uses in every window, or none */
#define TS_QUOTA_REFUND 1 /* give n uses back */
#define TS_QUOTA_PEEK 2   /* answer for one use, counting nothing */
#define TS_QUOTA_RESET 3  /* forget the key (fills no answer) */

typedef struct TsStore TsStore;
typedef struct TsBucket TsBucket;
typedef struct TsPage TsPage;
typedef struct TsError TsError;
typedef struct TsCancel TsCancel;
typedef struct TsCounters TsCounters;
typedef struct TsRateLimit TsRateLimit;
typedef struct TsQuota TsQuota;
typedef struct TsOnce TsOnce;
typedef struct TsClaim TsClaim;
typedef struct TsCaller TsCaller;
typedef struct TsTx TsTx;
typedef struct TsSnapshot TsSnapshot;
typedef struct TsConfig TsConfig;
typedef struct TsAnswers TsAnswers;

/* A borrowed look at a TsError; its pointers live as long as the error. */
typedef struct TsErrorView {
  int32_t code;
  const uint8_t *message;
  size_t message_len;
  const uint8_t *bucket; /* null if none */
  size_t bucket_len;
  const uint8_t *path; /* owner/owner/key; null if none */
  size_t path_len;
  const uint8_t *text; /* the message with its bucket and path, as the core shows it */
  size_t text_len;
} TsErrorView;

/* A value: kind says which of integer and bytes holds it. */
typedef struct TsValue {
  int32_t kind;
  int64_t integer;
  uint8_t *bytes; /* null when empty */
  size_t len;
} TsValue;

/* How a store opens. */
typedef struct TsStoreOptions {
  bool manual;      /* a test clock: nothing runs in the background */
  int64_t clock_ms; /* the test clock's start */
  uint32_t readers; /* reader connections; 0 for the default */
  uint64_t memory;  /* a memory budget in bytes, at least 1 MiB; 0 for none */
  int64_t mmap_size; /* bytes of kv.db each reader maps; 0 for the default (1 GiB,
                      * none with a memory budget), TS_MMAP_NONE for none */
  bool release_read_locks; /* readers give back their read-mark lock at every
                            * read, as plain SQLite does; false keeps it between
                            * reads of a quiet file (not with a test clock) */
  bool share_with_group; /* the directory and files the store creates are its
                          * group's too (0770, 0660); false: its owner's only
                          * (0700, 0600) */
} TsStoreOptions;

/* mmap_size for no mapped reads (a network filesystem; no SIGBUS when the
 * file is cut short under a read). Other negative values are TS_INVALID. */
#define TS_MMAP_NONE -1

/* The writer's groups since the store opened: writes / groups is how well
 * concurrent writes share a commit. */
typedef struct TsGroupStats {
  uint64_t groups;
  uint64_t writes;
} TsGroupStats;

/* What one maintenance pass did. */
typedef struct TsMaintenance {
  uint64_t flushed;
  uint64_t renewed;
  uint64_t cleared;
  uint64_t expired;
  bool more;
} TsMaintenance;

/* A write's own options, as the caller got them; the core checks their shape.
   Neither a ttl nor a time keeps the bucket's ttl, or a live key's expiry. */
typedef struct TsWriteOptions {
  bool has_ttl;
  int64_t ttl_ns; /* nanoseconds from now */
  bool has_at;
  int64_t at_ms; /* ms since the Unix epoch */
  bool has_if_version;
  int64_t if_version;
} TsWriteOptions;

/* A key with its value, version and expiry. */
typedef struct TsEntry {
  TsValue value;
  int64_t version;
  bool has_expiry;
  int64_t expires_ms;
  const uint8_t *key; /* in a page only; null otherwise */
  size_t key_len;
} TsEntry;

/* One window of a quota in an answer. */
typedef struct TsWindow {
  uint8_t name[32]; /* name_len bytes of it */
  size_t name_len;
  uint64_t used;
  uint64_t limit;
  uint64_t left;
  bool has_resets_at;
  int64_t resets_at_ns; /* ns since the Unix epoch */
} TsWindow;

/* The answer of a rate limit or a quota. */
typedef struct TsAllowance {
  bool ok;
  uint64_t left;
  bool has_retry_at;
  int64_t retry_at_ns;
  size_t window_count; /* a quota's windows; 0 for a rate limit */
  TsWindow windows[8];
} TsAllowance;

/* Checks a value inside a take's write, on the writer thread; non-zero keeps
 * the value and makes the take TS_CORRUPT. */
/* A submitted write's answer (ts_answers_wait); err, when not null, is the caller's. */
typedef struct TsAnswer {
  uint64_t token;
  int32_t code;
  int64_t version;
  TsError *err;
} TsAnswer;

typedef int32_t (*TsCheckFn)(uint64_t ctx, const TsValue *value);

/* Errors and buffers. */
void ts_error_view(const TsError *err, TsErrorView *out);
void ts_error_free(TsError *err);
void ts_bytes_free(uint8_t *ptr, size_t len);
int32_t ts_key_error(const uint8_t *name, size_t name_len, const uint8_t *owners, size_t owners_len,
                     const uint8_t *key, size_t key_len, int32_t code, const uint8_t *message, size_t message_len,
                     TsError **err);
int32_t ts_codec_fault(const uint8_t *word, size_t word_len, const uint8_t *detail, size_t detail_len,
                       TsError **err);
int32_t ts_error_new(const uint8_t *name, size_t name_len, int32_t code, const uint8_t *message, size_t message_len,
                     TsError **err);

/* The engine's log records, for the language's own logging. The text of a
   record belongs to the caller, who frees each part with ts_bytes_free. */
typedef struct TsLogRecord {
  int32_t level; /* 1 error, 2 warning, 3 information */
  uint8_t *target;
  size_t target_len;
  uint8_t *message;
  size_t message_len;
} TsLogRecord;
bool ts_logs_forward(void);
int32_t ts_logs_next(uint32_t timeout_ms, TsLogRecord *out);

/* Cancelling a write from another thread. */
TsCancel *ts_cancel_new(void);
void ts_cancel_fire(const TsCancel *cancel);
void ts_cancel_free(TsCancel *cancel);

/* The store. */
int32_t ts_store_open(const uint8_t *dir, size_t dir_len, const TsStoreOptions *options, TsStore **out,
                      TsError **err);
int32_t ts_store_close(const TsStore *s, TsError **err);
void ts_store_free(TsStore *s);
int32_t ts_store_maintain(const TsStore *s, TsMaintenance *out, TsError **err);
int32_t ts_store_group_stats(const TsStore *s, TsGroupStats *out, TsError **err);
int32_t ts_store_set_clock(const TsStore *s, int64_t ms, TsError **err);
int32_t ts_store_follow_clock(const TsStore *s, int64_t ms, TsError **err);
int64_t ts_store_now(const TsStore *s);

/* Durations and rates in the product's text ("15m", "1h30m"; "100/5h"), read
 * by the core's one parser: nanoseconds out, TS_INVALID for bad text. */
int32_t ts_parse_duration(const uint8_t *text_ptr, size_t text_len, int64_t *out_ns, TsError **err);
int32_t ts_parse_rate(const uint8_t *text_ptr, size_t text_len, uint64_t *count, int64_t *per_ns, TsError **err);

/* Buckets. `owners` is each owner as a little-endian uint32_t length and its
 * bytes; empty for the bucket's root. */
int32_t ts_bucket_open(const TsStore *s, const uint8_t *name, size_t name_len, int64_t ttl_ns, bool has_ttl,
                       int64_t idle_ns, bool has_idle, TsBucket **out, TsError **err);
void ts_bucket_free(TsBucket *b);
int32_t ts_bucket_get(const TsBucket *b, const uint8_t *owners, size_t owners_len, const uint8_t *key, size_t key_len,
                      int32_t want, TsEntry *out, bool *found, TsError **err);
int32_t ts_bucket_has(const TsBucket *b, const uint8_t *owners, size_t owners_len, const uint8_t *key, size_t key_len,
                      bool *found, TsError **err);
int32_t ts_bucket_set(const TsBucket *b, const uint8_t *owners, size_t owners_len, const uint8_t *key, size_t key_len,
                      int32_t kind, int64_t integer, const uint8_t *value, size_t value_len,
                      const TsWriteOptions *options, const TsCancel *cancel, int64_t *version, TsError **err);
int32_t ts_bucket_create(const TsBucket *b, const uint8_t *owners, size_t owners_len, const uint8_t *key,
                         size_t key_len, int32_t kind, int64_t integer, const uint8_t *value, size_t value_len,
                         const TsWriteOptions *options, int32_t want, const TsCancel *cancel, bool *written,
                         int64_t *version, TsEntry *found, TsError **err);
int32_t ts_bucket_take(const TsBucket *b, const uint8_t *owners, size_t owners_len, const uint8_t *key,
                       size_t key_len, const TsWriteOptions *options, int32_t want, TsCheckFn check,
                       uint64_t check_ctx, const TsCancel *cancel, TsEntry *out, bool *found, TsError **err);
int32_t ts_bucket_delete(const TsBucket *b, const uint8_t *owners, size_t owners_len, const uint8_t *key,
                         size_t key_len, const TsWriteOptions *options, const TsCancel *cancel, bool *found,
                         TsError **err);
int32_t ts_bucket_expire(const TsBucket *b, const uint8_t *owners, size_t owners_len, const uint8_t *key,
                         size_t key_len, const TsWriteOptions *options, const TsCancel *cancel, bool *found,
                         TsError **err);
int32_t ts_bucket_clear(const TsBucket *b, const uint8_t *owners, size_t owners_len, const TsCancel *cancel,
                        TsError **err);
int32_t ts_bucket_list(const TsBucket *b, const uint8_t *owners, size_t owners_len, const uint8_t *after,
                       size_t after_len, bool has_after, uint32_t limit, int32_t want, TsPage **out, TsError **err);
/* Writes answered through a queue: submit returns at once, one thread drains the answers. */
TsAnswers *ts_answers_new(void);
void ts_answers_free(TsAnswers *q);
size_t ts_answers_wait(const TsAnswers *q, TsAnswer *out, size_t cap);
int32_t ts_bucket_set_submit(const TsBucket *b, const uint8_t *owners, size_t owners_len, const uint8_t *key,
                             size_t key_len, int32_t kind, int64_t integer, const uint8_t *value, size_t value_len,
                             const TsWriteOptions *options, const TsCancel *cancel, const TsAnswers *answers,
                             uint64_t token, bool *answered, int64_t *version, TsError **err);
size_t ts_page_len(const TsPage *p);
bool ts_page_entry(const TsPage *p, size_t i, TsEntry *out);
bool ts_page_next(const TsPage *p, const uint8_t **key, size_t *key_len);
void ts_page_free(TsPage *p);

/* Counters: an int64 a key. */
int32_t ts_counters_open(const TsStore *s, const uint8_t *name, size_t name_len, int64_t ttl_ns, bool has_ttl,
                         int64_t flush_every_ns, bool has_flush_every, TsCounters **out, TsError **err);
void ts_counters_free(TsCounters *c);
int32_t ts_counters_add(const TsCounters *c, const uint8_t *owners, size_t owners_len, const uint8_t *key,
                        size_t key_len, int64_t n, bool max, const TsCancel *cancel, int64_t *out, TsError **err);
int32_t ts_counters_get(const TsCounters *c, const uint8_t *owners, size_t owners_len, const uint8_t *key,
                        size_t key_len, int64_t *out, TsError **err);
int32_t ts_counters_delete(const TsCounters *c, const uint8_t *owners, size_t owners_len, const uint8_t *key,
                           size_t key_len, const TsCancel *cancel, bool *found, TsError **err);
int32_t ts_counters_clear(const TsCounters *c, const uint8_t *owners, size_t owners_len, const TsCancel *cancel,
                          TsError **err);

/* Rate limits (GCRA). */
int32_t ts_rate_limit_open(const TsStore *s, const uint8_t *name, size_t name_len, uint64_t count, int64_t per_ns,
                           uint64_t burst, bool has_burst, TsRateLimit **out, TsError **err);
void ts_rate_limit_free(TsRateLimit *r);
int32_t ts_rate_limit_allow(const TsRateLimit *r, const uint8_t *owners, size_t owners_len, const uint8_t *key,
                            size_t key_len, uint64_t n, bool peek, TsAllowance *out, TsError **err);
int32_t ts_rate_limit_reset(const TsRateLimit *r, const uint8_t *owners, size_t owners_len, const uint8_t *key,
                            size_t key_len, TsError **err);

/* Quotas. `names` is each window's name as a little-endian uint32_t length
 * and its bytes; `limits` and `spans_ns` hold `count` values each. */
int32_t ts_quota_open(const TsStore *s, const uint8_t *name, size_t name_len, const uint8_t *names, size_t names_len,
                      const uint64_t *limits, const int64_t *spans_ns, size_t count, TsQuota **out, TsError **err);
void ts_quota_free(TsQuota *q);
int32_t ts_quota_use(const TsQuota *q, const uint8_t *owners, size_t owners_len, const uint8_t *key, size_t key_len,
                     int32_t op, uint64_t n, const TsCancel *cancel, TsAllowance *out, TsError **err);

/* Once: begin (waiting for any run of the key), then keep or abandon. */
int32_t ts_once_open(const TsStore *s, const uint8_t *name, size_t name_len, int64_t keep_ns, bool has_keep,
                     TsOnce **out, TsError **err);
void ts_once_free(TsOnce *o);
int32_t ts_once_begin(const TsOnce *o, const uint8_t *owners, size_t owners_len, const uint8_t *key, size_t key_len,
                      int32_t want, const TsCaller *caller, const TsCancel *cancel, bool *kept, TsValue *value,
                      TsClaim **claim, TsError **err);
int32_t ts_claim_keep(TsClaim *claim, int32_t kind, int64_t integer, const uint8_t *value, size_t value_len,
                      TsError **err);
void ts_claim_abandon(TsClaim *claim);
/* A caller's context (Go's context.Context keeps it) inside the run `claim`
 * holds: ts_once_begin with it refuses a run of that key (TS_INVALID). `outer`
 * may be null; the result stays valid after the claim is spent. */
TsCaller *ts_caller_inside_run(const TsCaller *outer, const TsClaim *claim);
void ts_caller_free(TsCaller *c);
int32_t ts_once_get(const TsOnce *o, const uint8_t *owners, size_t owners_len, const uint8_t *key, size_t key_len,
                    int32_t want, TsValue *value, bool *found, TsError **err);
int32_t ts_once_delete(const TsOnce *o, const uint8_t *owners, size_t owners_len, const uint8_t *key, size_t key_len,
                       const TsCancel *cancel, bool *found, TsError **err);

/* Transactions (KV-16): begin (waiting for the writer's turn), bucket calls
 * as the ts_bucket_* ones, then commit or roll back, then free. A call on a
 * transaction or snapshot that has ended is TS_CLOSED. */
int32_t ts_tx_begin(const TsStore *s, const TsCancel *cancel, TsTx **out, TsError **err);
int32_t ts_tx_commit(const TsTx *t, TsError **err);
void ts_tx_rollback(const TsTx *t);
void ts_tx_free(TsTx *t);
/* Marks the calling thread as the transaction's until it ends: a call from it
 * that would wait for the same store's writer outside the transaction is
 * TS_INVALID at once. Only for a caller that keeps the transaction's calls on
 * this thread. */
void ts_tx_hold_thread(const TsTx *t);

/* Counters, quotas and once answers inside a transaction (KV-16). Counters
   with flush_every and rate limits cannot join one: TS_INVALID, saying why. */
#define TS_TX_COUNTER_ADD 0
#define TS_TX_COUNTER_MAX 1
#define TS_TX_COUNTER_GET 2
#define TS_TX_COUNTER_DELETE 3
int32_t ts_tx_check_counters(const TsTx *t, const TsCounters *c, TsError **err);
int32_t ts_tx_refuse_rate_limit(const TsTx *t, const TsRateLimit *r, TsError **err);
int32_t ts_tx_counters(const TsTx *t, const TsCounters *c, const uint8_t *owners, size_t owners_len, const uint8_t *key,
                       size_t key_len, int32_t op, int64_t n, int64_t *out, bool *found, TsError **err);
int32_t ts_tx_quota(const TsTx *t, const TsQuota *q, const uint8_t *owners, size_t owners_len, const uint8_t *key,
                    size_t key_len, int32_t op, uint64_t n, TsAllowance *out, TsError **err);
int32_t ts_tx_once_get(const TsTx *t, const TsOnce *o, const uint8_t *owners, size_t owners_len, const uint8_t *key,
                       size_t key_len, int32_t want, TsValue *value, bool *found, TsError **err);
int32_t ts_tx_once_delete(const TsTx *t, const TsOnce *o, const uint8_t *owners, size_t owners_len, const uint8_t *key,
                          size_t key_len, bool *found, TsError **err);
int32_t ts_tx_get(const TsTx *t, const TsBucket *b, const uint8_t *owners, size_t owners_len, const uint8_t *key,
                  size_t key_len, int32_t want, TsEntry *out, bool *found, TsError **err);
int32_t ts_tx_set(const TsTx *t, const TsBucket *b, const uint8_t *owners, size_t owners_len, const uint8_t *key,
                  size_t key_len, int32_t kind, int64_t integer, const uint8_t *value, size_t value_len,
                  const TsWriteOptions *options, int64_t *version, TsError **err);
int32_t ts_tx_create(const TsTx *t, const TsBucket *b, const uint8_t *owners, size_t owners_len, const uint8_t *key,
                     size_t key_len, int32_t kind, int64_t integer, const uint8_t *value, size_t value_len,
                     const TsWriteOptions *options, int32_t want, bool *written, int64_t *version, TsEntry *found,
                     TsError **err);
int32_t ts_tx_take(const TsTx *t, const TsBucket *b, const uint8_t *owners, size_t owners_len, const uint8_t *key,
                   size_t key_len, const TsWriteOptions *options, int32_t want, TsCheckFn check, uint64_t check_ctx,
                   TsEntry *out, bool *found, TsError **err);
int32_t ts_tx_delete(const TsTx *t, const TsBucket *b, const uint8_t *owners, size_t owners_len, const uint8_t *key,
                     size_t key_len, const TsWriteOptions *options, bool *found, TsError **err);
int32_t ts_tx_expire(const TsTx *t, const TsBucket *b, const uint8_t *owners, size_t owners_len, const uint8_t *key,
                     size_t key_len, const TsWriteOptions *options, bool *found, TsError **err);
int32_t ts_tx_clear(const TsTx *t, const TsBucket *b, const uint8_t *owners, size_t owners_len, TsError **err);
int32_t ts_tx_list(const TsTx *t, const TsBucket *b, const uint8_t *owners, size_t owners_len, const uint8_t *after,
                   size_t after_len, bool has_after, uint32_t limit, int32_t want, TsPage **out, TsError **err);

/* Read snapshots: every read sees the file as it was at the first one. */
int32_t ts_snapshot_open(const TsStore *s, TsSnapshot **out, TsError **err);
int32_t ts_snapshot_get(const TsSnapshot *s, const TsBucket *b, const uint8_t *owners, size_t owners_len,
                        const uint8_t *key, size_t key_len, int32_t want, TsEntry *out, bool *found, TsError **err);
int32_t ts_snapshot_list(const TsSnapshot *s, const TsBucket *b, const uint8_t *owners, size_t owners_len,
                         const uint8_t *after, size_t after_len, bool has_after, uint32_t limit, int32_t want,
                         TsPage **out, TsError **err);
void ts_snapshot_close(const TsSnapshot *s);
void ts_snapshot_free(TsSnapshot *s);

/* Config (KV-20): fields, layers, values and sources as JSON text; the
 * bytes of get and sources are the caller's (ts_bytes_free). */
int32_t ts_config_open(const TsStore *s, const uint8_t *name, size_t name_len, const uint8_t *fields, size_t fields_len,
                       const uint8_t *layers, size_t layers_len, TsConfig **out, TsError **err);
void ts_config_free(TsConfig *c);
int32_t ts_config_get(const TsConfig *c, uint8_t **out, size_t *out_len, TsError **err);
int32_t ts_config_sources(const TsConfig *c, uint8_t **out, size_t *out_len, TsError **err);
int32_t ts_config_update(const TsConfig *c, const uint8_t *patch, size_t patch_len, TsError **err);
int32_t ts_config_reset(const TsConfig *c, const uint8_t *path, size_t path_len, TsError **err);
uint64_t ts_config_generation(const TsConfig *c);
uint64_t ts_config_wait(const TsConfig *c, uint64_t after, uint64_t timeout_ms);
void ts_config_refuse_kept(const TsConfig *c, uint64_t generation, const uint8_t *why, size_t why_len);

/* A TEST HOOK, not for applications: the store's next group commit fails as
 * a failed fsync would, and each of its writes answers TS_OUTCOME_UNKNOWN. */
int32_t ts_store_fail_next_commit_for_tests(const TsStore *s, TsError **err);

#ifdef __cplusplus
}
#endif

#endif /* TINYSTORE_H */
