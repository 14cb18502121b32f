/* A small C host for a policy built by `poolc build`: it opens the shared object
 * with dlopen, reads its manifest (JSON, docs/ABI.md) with the little parser below,
 * finds a pool's queue keys and layouts by name, builds a row per record and the
 * ctx from NAME=VALUE input, and asks the compiled `select` which record the pool
 * admits first. It knows nothing of any particular spec: everything comes from the
 * manifest. It owns no policy logic and trusts the library's manifest.
 *
 *   cc -std=c99 -o c-host host.c -ldl
 *   ./c-host ./libpolicy.so POOL [PREFIX] < input
 *
 * Input, one item per line (names as the spec writes them; `#` starts a comment):
 *   ctx NAME=VALUE ...     the ctx slots (now, free(kv), ...); at most once
 *   row NAME=VALUE ...     one waiting record (prompt, enqueued, units, ...)
 * A slot given no value takes the attribute's session default, else 0.
 *
 * Output: the manifest facts used, each row's key values (as %.17g and as the
 * f64's hex bits, which is exact), and `select: INDEX` (-1 when there are no rows).
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a minimal JSON reader: enough for the manifest, strict enough to trust ---- */

enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct json {
  enum jtype type;
  double num;              /* J_NUM, and J_BOOL as 0/1 */
  char *str;               /* J_STR */
  size_t n;                /* J_ARR, J_OBJ: number of items */
  struct json *items;      /* J_ARR, J_OBJ: the values */
  char **keys;             /* J_OBJ: the field names */
};

static const char *jp; /* the parse cursor */

static void die(const char *what, const char *detail) {
  fprintf(stderr, "c-host: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  exit(1);
}

static void ws(void) {
  while (*jp == ' ' || *jp == '\n' || *jp == '\t' || *jp == '\r') jp++;
}

static char *jstring(void) {
  if (*jp != '"') die("manifest", "expected a string");
  jp++;
  size_t cap = 16, len = 0;
  char *s = malloc(cap);
  if (!s) die("out of memory", NULL);
  while (*jp != '"') {
    char c = *jp++;
    if (c == '\0') die("manifest", "unterminated string");
    if (c == '\\') {
      c = *jp++;
      switch (c) {
        case 'n': c = '\n'; break;
        case 't': c = '\t'; break;
        case 'r': c = '\r'; break;
        case 'b': c = '\b'; break;
        case 'f': c = '\f'; break;
        case 'u': { /* names are ASCII; anything else becomes '?' */
          unsigned code = 0;
          if (sscanf(jp, "%4x", &code) != 1) die("manifest", "bad \\u escape");
          jp += 4;
          c = code < 0x80 ? (char)code : '?';
          break;
        }
        case '"': case '\\': case '/': break;
        default: die("manifest", "bad escape");
      }
    }
    if (len + 2 > cap) {
      cap *= 2;
      s = realloc(s, cap);
      if (!s) die("out of memory", NULL);
    }
    s[len++] = c;
  }
  jp++;
  s[len] = '\0';
  return s;
}

static void jvalue(struct json *v, int depth);

/* Appends one parsed value (and for objects its key) to an array or object. */
static void jpush(struct json *v, char *key, int depth) {
  v->items = realloc(v->items, (v->n + 1) * sizeof *v->items);
  if (v->type == J_OBJ) v->keys = realloc(v->keys, (v->n + 1) * sizeof *v->keys);
  if (!v->items || (v->type == J_OBJ && !v->keys)) die("out of memory", NULL);
  if (v->type == J_OBJ) v->keys[v->n] = key;
  jvalue(&v->items[v->n], depth + 1);
  v->n++;
}

static void jvalue(struct json *v, int depth) {
  memset(v, 0, sizeof *v);
  if (depth > 64) die("manifest", "nested too deep");
  ws();
  if (*jp == '{' || *jp == '[') {
    char close = *jp == '{' ? '}' : ']';
    v->type = *jp == '{' ? J_OBJ : J_ARR;
    jp++;
    ws();
    if (*jp == close) { jp++; return; }
    for (;;) {
      char *key = NULL;
      if (v->type == J_OBJ) {
        ws();
        key = jstring();
        ws();
        if (*jp++ != ':') die("manifest", "expected ':'");
      }
      jpush(v, key, depth);
      ws();
      if (*jp == ',') { jp++; continue; }
      if (*jp++ != close) die("manifest", "expected ',' or a closing bracket");
      return;
    }
  } else if (*jp == '"') {
    v->type = J_STR;
    v->str = jstring();
  } else if (!strncmp(jp, "true", 4) || !strncmp(jp, "false", 5)) {
    v->type = J_BOOL;
    v->num = *jp == 't';
    jp += *jp == 't' ? 4 : 5;
  } else if (!strncmp(jp, "null", 4)) {
    v->type = J_NULL;
    jp += 4;
  } else {
    char *end;
    v->type = J_NUM;
    v->num = strtod(jp, &end);
    if (end == jp) die("manifest", "expected a value");
    jp = end;
  }
}

/* A field of an object, or NULL. */
static const struct json *jget(const struct json *o, const char *key) {
  if (!o || o->type != J_OBJ) return NULL;
  for (size_t i = 0; i < o->n; i++)
    if (!strcmp(o->keys[i], key)) return &o->items[i];
  return NULL;
}

static const char *jstr(const struct json *v, const char *what) {
  if (!v || v->type != J_STR) die("manifest: missing string", what);
  return v->str;
}

/* ---- the host ---- */

typedef double (*key_fn)(const double *row, const double *ctx);
typedef int64_t (*select_fn)(const double *rows, uint64_t n, uint64_t stride, const double *ctx);
typedef const char *(*manifest_fn)(uint64_t *len);

static void *sym(void *lib, const char *name) {
  void *p = dlsym(lib, name);
  if (!p) die("missing symbol", name);
  return p;
}

/* The slot of `name` in a layout list (an array of {"name": ...}), or -1. */
static int slot_of(const struct json *slots, const char *name) {
  for (size_t i = 0; i < slots->n; i++)
    if (!strcmp(jstr(jget(&slots->items[i], "name"), "slot name"), name)) return (int)i;
  return -1;
}

/* Sets the slots named in "NAME=VALUE NAME=VALUE ..." of `line`. */
static void assign(char *line, const struct json *slots, double *out) {
  for (char *tok = strtok(line, " \t\n"); tok; tok = strtok(NULL, " \t\n")) {
    char *eq = strchr(tok, '=');
    if (!eq) die("expected NAME=VALUE, got", tok);
    *eq = '\0';
    int s = slot_of(slots, tok);
    if (s < 0) die("this site has no slot named", tok);
    char *end;
    out[s] = strtod(eq + 1, &end);
    if (end == eq + 1 || *end) die("not a number", eq + 1);
  }
}

int main(int argc, char **argv) {
  if (argc < 3 || argc > 4) {
    fprintf(stderr, "usage: %s LIBRARY.so POOL [PREFIX] < input\n", argv[0]);
    return 2;
  }
  const char *prefix = argc == 4 ? argv[3] : "poolc";
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) die("dlopen", dlerror());

  char name[256];
  snprintf(name, sizeof name, "%s_manifest", prefix);
  manifest_fn manifest = (manifest_fn)sym(lib, name);
  uint64_t len = 0;
  jp = manifest(&len);
  struct json m;
  jvalue(&m, 0);
  const struct json *format = jget(&m, "format");
  if (!format || format->type != J_NUM || format->num != 8) die("manifest", "not format 8");
  printf("manifest: format 8, %llu bytes, target %s\n", (unsigned long long)len,
         jstr(jget(&m, "target"), "target"));

  const struct json *pools = jget(&m, "pools"), *pool = NULL;
  for (size_t i = 0; pools && i < pools->n; i++)
    if (!strcmp(jstr(jget(&pools->items[i], "name"), "pool name"), argv[2])) pool = &pools->items[i];
  if (!pool) die("no such pool", argv[2]);
  const struct json *queue = jget(pool, "queue");
  if (strcmp(jstr(jget(queue, "policy"), "queue policy"), "by"))
    die("the pool queues first come, first served; nothing to evaluate", argv[2]);
  /* "queue_tie": "id" (R21) asks a host to break ties of the keys by session id;
     this one's records have no ids, so it prints the compiled select's choice. */
  const struct json *keys = jget(queue, "keys");
  const struct json *layout = jget(pool, "queue_layout");
  const struct json *row_slots = jget(layout, "row"), *ctx_slots = jget(layout, "ctx");
  if (!keys || !row_slots || !ctx_slots) die("manifest", "incomplete queue");
  size_t width = row_slots->n;
  printf("pool %s: %zu key%s, row", argv[2], keys->n, keys->n == 1 ? "" : "s");
  for (size_t i = 0; i < width; i++) printf(" [%zu] %s", i, jstr(jget(&row_slots->items[i], "name"), "slot"));
  printf(", ctx");
  for (size_t i = 0; i < ctx_slots->n; i++) printf(" [%zu] %s", i, jstr(jget(&ctx_slots->items[i], "name"), "slot"));
  printf("\n");

  /* Row defaults: a session attribute's default where it has one, else 0. */
  const struct json *session = jget(&m, "session");
  double *defaults = calloc(width ? width : 1, sizeof *defaults);
  if (!defaults) die("out of memory", NULL);
  for (size_t i = 0; i < width; i++) {
    const struct json *attr = jget(&row_slots->items[i], "attr");
    if (attr && session && attr->num < (double)session->n) {
      const struct json *d = jget(&session->items[(size_t)attr->num], "default");
      if (d && d->type == J_NUM) defaults[i] = d->num;
    }
  }

  double *ctx = calloc(ctx_slots->n ? ctx_slots->n : 1, sizeof *ctx);
  double *rows = NULL;
  size_t n = 0;
  char line[4096];
  while (fgets(line, sizeof line, stdin)) {
    char *hash = strchr(line, '#');
    if (hash) *hash = '\0';
    char *rest = line + strspn(line, " \t");
    if (!strncmp(rest, "ctx", 3)) {
      assign(rest + 3, ctx_slots, ctx);
    } else if (!strncmp(rest, "row", 3)) {
      rows = realloc(rows, (n + 1) * (width ? width : 1) * sizeof *rows);
      if (!rows || !ctx) die("out of memory", NULL);
      memcpy(rows + n * width, defaults, width * sizeof *rows);
      assign(rest + 3, row_slots, rows + n * width);
      n++;
    } else if (rest[strspn(rest, " \t\n")] != '\0') {
      die("expected `ctx ...` or `row ...`, got", rest);
    }
  }

  for (size_t r = 0; r < n; r++) {
    printf("row %zu:", r);
    for (size_t k = 0; k < keys->n; k++) {
      key_fn f = (key_fn)sym(lib, jstr(jget(&keys->items[k], "symbol"), "key symbol"));
      double v = f(rows + r * width, ctx);
      uint64_t bits;
      memcpy(&bits, &v, sizeof bits);
      printf(" %.17g (%016llx)", v, (unsigned long long)bits);
    }
    printf("\n");
  }
  select_fn select = (select_fn)sym(lib, jstr(jget(queue, "select"), "select symbol"));
  printf("select: %lld\n", (long long)select(rows, n, width, ctx));
  /* The process ends here; the library and the parsed manifest go with it. */
  return 0;
}
