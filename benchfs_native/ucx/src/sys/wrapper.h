#include <ucp/api/ucp.h>
#include <ucs/type/status.h>
#include <ucs/debug/log_def.h>
