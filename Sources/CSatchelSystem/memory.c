#include "CSatchelSystem.h"
#if defined(__linux__)
#include <sys/sysinfo.h>
#endif

unsigned long long satchel_memory_and_swap(void) {
#if defined(__linux__)
    struct sysinfo info;
    if (sysinfo(&info) != 0) return 0;
    unsigned long long unit = info.mem_unit ? info.mem_unit : 1;
    unsigned long long ram = (unsigned long long)info.totalram;
    unsigned long long swap = (unsigned long long)info.totalswap;
    if (ram > ~0ULL / unit || swap > ~0ULL / unit) return ~0ULL;
    ram *= unit;
    swap *= unit;
    return ram > ~0ULL - swap ? ~0ULL : ram + swap;
#else
    return 0;
#endif
}
