/*
 * ucx_dlopen.h -- load a UCX library (libucp for the UCX transport, libucs and with it
 * libucm for the registration cache) without letting libucs's constructor change the
 * process: ucx_dlopen.c says how.
 */
#ifndef ZCOLL_UCX_DLOPEN_H
#define ZCOLL_UCX_DLOPEN_H

/* dlopen(lib, RTLD_NOW | RTLD_LOCAL) with UCX's signal handling off unless the user
 * asked for it; NULL (and dlerror()'s text in err) on failure. */
void *zcoll__ucx_dlopen(const char *lib, char *err, unsigned long err_len);

#endif
