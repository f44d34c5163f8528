// Symbol visibility: the library is built with hidden visibility, so only what is marked here is its ABI.
#pragma once

#if defined(KOLO_BUILDING_LIBRARY)
#define KOLO_EXPORT __attribute__((visibility("default")))
#else
#define KOLO_EXPORT
#endif
