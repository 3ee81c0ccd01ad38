/* tests/capi/toxiproxy_fixture.h — a real toxiproxy in front of the test
 * nginx (nginx_fixture.h), for the C ABI's fault tests.
 *
 * start_toxiproxy() runs `tests/toxiproxy/toxiproxy_server.py serve` with
 * popen(cmd, "w"): it starts toxiproxy on loopback with the proxy "nginx" to
 * the nginx of start_server(), writes "<api port> <proxy port>" to a file,
 * and stops when its stdin reaches end of file (stop_toxiproxy(), or the
 * test process dying). add_toxic() and remove_toxic() speak toxiproxy's HTTP
 * API over a plain loopback socket (not through the library under test).
 *
 * A test exits SKIP (77) when toxiproxy cannot start, except when
 * $MULLIGAN_TOXIPROXY names the binary (scripts/test.sh sets it after
 * scripts/setup.sh installed it): then it fails. Needs the compile
 * definitions MULLIGAN_TESTS_DIR and MULLIGAN_PYTHON. Header-only, one test
 * per binary, after nginx_fixture.h.
 */
#ifndef MULLIGAN_TESTS_CAPI_TOXIPROXY_FIXTURE_H_
#define MULLIGAN_TESTS_CAPI_TOXIPROXY_FIXTURE_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nginx_fixture.h"

static int g_toxiproxy_api_port;
static char g_proxy_url[64];

/* The exit code when toxiproxy cannot start: SKIP, or 1 when the suite said
 * it must be there. */
static inline int toxiproxy_missing_exit_code(void) {
  const char *named = getenv("MULLIGAN_TOXIPROXY");
  return named != NULL && named[0] != '\0' ? 1 : SKIP;
}

/* Starts toxiproxy in front of the nginx at g_base_url; returns its pipe or
 * NULL (after printing why). `tmpdir` holds the port file. */
static inline FILE *start_toxiproxy(const char *tmpdir) {
  char launcher[512], cmd[2048], port_file[300];
  FILE *proc;
  int waited, nginx_port = 0, api = 0, proxy = 0;

  if (sscanf(g_base_url, "http://127.0.0.1:%d", &nginx_port) != 1) {
    printf("FAIL: no nginx port in %s\n", g_base_url);
    return NULL;
  }
  snprintf(launcher, sizeof launcher, "%s/toxiproxy/toxiproxy_server.py", MULLIGAN_TESTS_DIR);
  snprintf(port_file, sizeof port_file, "%s/toxiproxy-ports", tmpdir);
  snprintf(cmd, sizeof cmd, "'%s' '%s' serve --upstream 127.0.0.1:%d --port-file '%s'",
           MULLIGAN_PYTHON, launcher, nginx_port, port_file);
  proc = popen(cmd, "w");
  if (proc == NULL) {
    printf("cannot run %s\n", cmd);
    return NULL;
  }
  for (waited = 0; waited < 20000; waited += 50) {
    FILE *f = fopen(port_file, "r");
    if (f != NULL) {
      int n = fscanf(f, "%d %d", &api, &proxy);
      fclose(f);
      if (n == 2 && api > 0 && proxy > 0) break;
    }
    sleep_ms(50);
  }
  if (api <= 0 || proxy <= 0) {
    printf("toxiproxy did not start within 20 s (see the launcher's stderr above)\n");
    pclose(proc);
    return NULL;
  }
  g_toxiproxy_api_port = api;
  snprintf(g_proxy_url, sizeof g_proxy_url, "http://127.0.0.1:%d", proxy);
  printf("toxiproxy at %s (API port %d) -> nginx %s\n", g_proxy_url, api, g_base_url);
  return proc;
}

/* Connects to 127.0.0.1:`port`; returns the socket or -1. */
static inline int connect_loopback(int port) {
  struct sockaddr_in addr;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons((unsigned short)port);
  if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/* Sends `len` bytes of `data` on `fd`; returns 1 when all went. */
static inline int send_all(int fd, const char *data, size_t len) {
  size_t sent = 0;
  while (sent < len) {
    ssize_t n = send(fd, data + sent, len - sent, 0);
    if (n <= 0) return 0;
    sent += (size_t)n;
  }
  return 1;
}

/* Sends one request to toxiproxy's API (HTTP/1.1, Connection: close) and
 * returns its status, or -1 when the API cannot be reached. */
static inline int toxiproxy_api(const char *method, const char *path, const char *json) {
  char request[2048], answer[512];
  size_t len, got = 0;
  int status = -1, fd = connect_loopback(g_toxiproxy_api_port);
  if (fd < 0) return -1;
  len = (size_t)snprintf(request, sizeof request,
                         "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                         "Content-Type: application/json\r\nContent-Length: %u\r\n\r\n%s",
                         method, path, (unsigned)strlen(json), json);
  if (send_all(fd, request, len)) {
    /* Connection: close, so the answer ends where the stream does. */
    while (got < sizeof answer - 1) {
      ssize_t n = recv(fd, answer + got, sizeof answer - 1 - got, 0);
      if (n <= 0) break;
      got += (size_t)n;
    }
  }
  answer[got] = '\0';
  close(fd);
  if (sscanf(answer, "HTTP/1.%*d %d", &status) != 1) status = -1;
  return status;
}

/* Adds toxic `name` of type `type` on the downstream (nginx to client) of
 * the proxy, with `attributes` (a JSON object); returns 1 on success. */
static inline int add_toxic(const char *name, const char *type, const char *attributes) {
  char json[512];
  int status;
  snprintf(json, sizeof json,
           "{\"name\":\"%s\",\"type\":\"%s\",\"stream\":\"downstream\",\"toxicity\":1.0,"
           "\"attributes\":%s}",
           name, type, attributes);
  status = toxiproxy_api("POST", "/proxies/nginx/toxics", json);
  if (status != 200) fprintf(stderr, "adding toxic %s: HTTP %d\n", name, status);
  return status == 200;
}

/* Removes toxic `name`; returns 1 when it was there. */
static inline int remove_toxic(const char *name) {
  char path[256];
  snprintf(path, sizeof path, "/proxies/nginx/toxics/%s", name);
  return toxiproxy_api("DELETE", path, "") == 204;
}

/* Stops toxiproxy (end of its stdin). */
static inline void stop_toxiproxy(FILE *proc) { pclose(proc); }

#endif /* MULLIGAN_TESTS_CAPI_TOXIPROXY_FIXTURE_H_ */
