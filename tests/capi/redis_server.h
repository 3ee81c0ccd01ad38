/* tests/capi/redis_server.h — a real redis-server for the C ABI tests that
 * need one (outbox_redis_test.c, state_test.c): started on a free loopback
 * port without persistence, stopped by its PID. Header-only (static
 * functions), POSIX (fork/exec, sockets). Include after the system headers
 * below and capi_check.h. */
#ifndef MULLIGAN_TESTS_CAPI_REDIS_SERVER_H_
#define MULLIGAN_TESTS_CAPI_REDIS_SERVER_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SKIP 77

static pid_t g_redis = -1;
static int g_port = 0;

/* A port that was free a moment ago: bound to 0, read, closed. */
static int free_port(void) {
  struct sockaddr_in addr;
  socklen_t len = sizeof addr;
  int fd = socket(AF_INET, SOCK_STREAM, 0), port = 0;
  if (fd < 0) return 0;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, (struct sockaddr *)&addr, sizeof addr) == 0 &&
      getsockname(fd, (struct sockaddr *)&addr, &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

static int can_connect(int port) {
  struct sockaddr_in addr;
  int fd = socket(AF_INET, SOCK_STREAM, 0), ok;
  if (fd < 0) return 0;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_port = htons((unsigned short)port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ok = connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0;
  close(fd);
  return ok;
}

static void sleep_ms(long ms) {
  struct timespec ts;
  ts.tv_sec = ms / 1000;
  ts.tv_nsec = (ms % 1000) * 1000000L;
  nanosleep(&ts, NULL);
}

/* Starts redis-server on a free port (a few ports are tried: another
 * process may take the one chosen before the server binds it); 1 once it
 * accepts connections, within 10 s. */
static int start_redis(const char *binary) {
  int tries;
  for (tries = 0; tries < 5; ++tries) {
    char port_arg[16];
    int waited, status;
    g_port = free_port();
    if (g_port == 0) continue;
    snprintf(port_arg, sizeof port_arg, "%d", g_port);
    g_redis = fork();
    if (g_redis < 0) return 0;
    if (g_redis == 0) {
      execlp(binary, binary, "--port", port_arg, "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", "/tmp", "--loglevel", "warning", (char *)NULL);
      _exit(127);
    }
    for (waited = 0; waited < 10000; waited += 20) {
      if (can_connect(g_port)) return 1;
      if (waitpid(g_redis, &status, WNOHANG) == g_redis) break; /* exited: port taken? */
      sleep_ms(20);
    }
    if (kill(g_redis, 0) == 0) {
      kill(g_redis, SIGKILL);
      waitpid(g_redis, &status, 0);
    }
    g_redis = -1;
  }
  return 0;
}

static void stop_redis(void) {
  int status;
  if (g_redis <= 0) return;
  kill(g_redis, SIGTERM);
  waitpid(g_redis, &status, 0);
  g_redis = -1;
}

/* The binary to start: $MULLIGAN_REDIS_SERVER, else redis-server from PATH. */
static const char *redis_binary(void) {
  const char *named = getenv("MULLIGAN_REDIS_SERVER");
  return named != NULL && named[0] != '\0' ? named : "redis-server";
}

/* What a test exits with when no server could start: 77 (skipped), unless
 * $MULLIGAN_REDIS_SERVER names one (scripts/test.sh sets it): then 1. */
static int redis_unavailable_exit(void) {
  const char *named = getenv("MULLIGAN_REDIS_SERVER");
  printf("redis-server (%s) did not start\n", redis_binary());
  return named != NULL && named[0] != '\0' ? 1 : SKIP;
}

#endif /* MULLIGAN_TESTS_CAPI_REDIS_SERVER_H_ */
