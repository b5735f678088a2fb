/* llm_reader.h - libshared's model-output readers as the core's seam. */
#ifndef WAKE_LLM_READER_H
#define WAKE_LLM_READER_H
#include "wake.h"

extern const wake_reader WAKE_LLM_READER;

#endif
