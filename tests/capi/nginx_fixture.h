/* tests/capi/nginx_fixture.h — the real nginx of the C ABI's HTTP tests.
 *
 * start_server() runs tests/nginx/nginx_server.py with popen(cmd, "w"): it
 * writes its port to a file once /ok answers, and stops when its stdin
 * reaches end of file, i.e. at stop_server() (pclose) or when the test
 * process dies. A test exits SKIP (77, ctest's SKIP_RETURN_CODE) when the
 * launcher is missing or nginx cannot start. Needs the compile definitions
 * MULLIGAN_TESTS_DIR and MULLIGAN_PYTHON. Header-only, one test per binary.
 */
#ifndef MULLIGAN_TESTS_CAPI_NGINX_FIXTURE_H_
#define MULLIGAN_TESTS_CAPI_NGINX_FIXTURE_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define SKIP 77

static char g_base_url[64];
static char g_workdir[256];

static inline void sleep_ms(long ms) {
  struct timespec ts;
  ts.tv_sec = ms / 1000;
  ts.tv_nsec = (ms % 1000) * 1000000L;
  nanosleep(&ts, NULL);
}

/* Starts the server; returns its pipe or NULL (after printing why). */
static inline FILE *start_server(char *tmpdir) {
  char launcher[512], cmd[2048], port_file[300];
  FILE *server;
  int waited, port = 0;

  snprintf(launcher, sizeof launcher, "%s/nginx/nginx_server.py", MULLIGAN_TESTS_DIR);
  if (access(launcher, R_OK) != 0) {
    printf("SKIP: %s does not exist (yet)\n", launcher);
    return NULL;
  }
  snprintf(port_file, sizeof port_file, "%s/port", tmpdir);
  snprintf(g_workdir, sizeof g_workdir, "%s/work", tmpdir);
  snprintf(cmd, sizeof cmd, "'%s' '%s' serve --port-file '%s' --workdir '%s'", MULLIGAN_PYTHON,
           launcher, port_file, g_workdir);
  server = popen(cmd, "w");
  if (server == NULL) {
    printf("SKIP: cannot run %s\n", cmd);
    return NULL;
  }
  for (waited = 0; waited < 15000; waited += 50) {
    FILE *f = fopen(port_file, "r");
    if (f != NULL) {
      int n = fscanf(f, "%d", &port);
      fclose(f);
      if (n == 1 && port > 0) break;
    }
    sleep_ms(50);
  }
  if (port <= 0) {
    printf("SKIP: nginx did not start within 15 s (see the launcher's stderr above)\n");
    pclose(server);
    return NULL;
  }
  snprintf(g_base_url, sizeof g_base_url, "http://127.0.0.1:%d", port);
  printf("nginx at %s\n", g_base_url);
  return server;
}

/* Counts access-log lines that contain `needle`. */
static inline int count_log_lines(const char *needle) {
  char path[300], line[4096];
  int count = 0;
  FILE *f;
  snprintf(path, sizeof path, "%s/logs/access.log", g_workdir);
  f = fopen(path, "r");
  if (f == NULL) return -1;
  while (fgets(line, sizeof line, f) != NULL) {
    if (strstr(line, needle) != NULL) ++count;
  }
  fclose(f);
  return count;
}

/* Returns a loopback port that nothing listens on. */
static inline int closed_port(void) {
  struct sockaddr_in addr;
  socklen_t len = sizeof addr;
  int port = 1, fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return port;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (bind(fd, (struct sockaddr *)&addr, sizeof addr) == 0 &&
      getsockname(fd, (struct sockaddr *)&addr, &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

/* Stops the server (end of its stdin) and removes `tmpdir`. */
static inline void stop_server(FILE *server, const char *tmpdir) {
  char cmd[512];
  pclose(server);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
}

#endif /* MULLIGAN_TESTS_CAPI_NGINX_FIXTURE_H_ */
