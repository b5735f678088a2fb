/* text.h - reading chat text: @mentions and whole words. Pure (no I/O, no
 * allocation), in its own library `vigil_text` so decision cores can link
 * it without the shell.
 *
 * Mentions: `@name` where '@' does not follow a letter, digit or '_' (so
 * not an e-mail address; letters of Latin, Greek, Cyrillic, Armenian,
 * Hebrew and Arabic count as letters, other non-ASCII characters such as
 * CJK, punctuation and emoji are boundaries); name = the longest run of
 * [A-Za-z0-9._-] after it minus trailing '.' and '-' (sentence
 * punctuation), 1..64 characters. A longer run, or one running into a
 * letter no id may hold ("@josé"), is not a mention. `@self` (a persona's
 * command about itself) is never a mention. Names compare
 * case-insensitively. */
#ifndef VIGIL_TEXT_H
#define VIGIL_TEXT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VIGIL_MENTION_NAME_MAX 64

/* Appends to out[n..max) the distinct mentions in text, lower-cased, in
 * order of appearance, skipping names already in out[0..n) and `exclude`
 * (case-insensitive; may be NULL). Returns the new count. */
int vigil_mentions_parse(const char *text, char (*out)[VIGIL_MENTION_NAME_MAX + 1], int n,
                         int max, const char *exclude);

/* Who a message mentions, as chat-router notifies them: the mentions in its
 * text (vigil_mentions_parse), then the ids of its `mentions` field that are
 * not among them, lower-cased, distinct, at most max; never `exclude` (an AI
 * sender: a persona does not mention itself; may be NULL), "self" or an
 * entry that is no id. Returns the count. */
int vigil_mentions_collect(const char *text, const char *const *ids, int n_ids,
                           const char *exclude, char (*out)[VIGIL_MENTION_NAME_MAX + 1],
                           int max);

/* Where text mentions `name` (case-insensitive): a pointer to its '@', or
 * NULL. "self" may be looked for here (the @self command). A name that is
 * no id, such as a display name "Helper AI", matches "@<name>" as a whole
 * word. */
const char *vigil_text_find_mention(const char *text, const char *name);

/* True when text mentions `name` (as vigil_text_find_mention; "self" is
 * never a mention). */
bool vigil_text_mentions(const char *text, const char *name);

/* The characters that follow an '@' in a text, compared as the matching
 * above compares them (tolower). Every mention, of an id or of a display
 * name, is an '@' followed by the name, so a name whose first character
 * is not among them is not mentioned: a room matching one message against
 * each of its 1,000 personas tests one bit for most of them instead of
 * scanning the text for each. */
typedef struct vigil_mention_starts {
    uint64_t bits[4];
} vigil_mention_starts;

void vigil_mention_starts_of(vigil_mention_starts *m, const char *text);
/* False only when text (as given to vigil_mention_starts_of) cannot
 * mention name; true means vigil_text_mentions has to decide. */
bool vigil_mention_may(const vigil_mention_starts *m, const char *name);

/* True when `word` occurs in text as a whole word, case-insensitively:
 * not preceded or followed by a letter (ASCII or of the alphabetic scripts
 * above), a digit or '_'. "helpful" does not contain "help"; "BROKEN!" does
 * contain "broken". */
bool vigil_text_has_word(const char *text, const char *word);
/* Where that whole word starts, or NULL. */
const char *vigil_text_find_word(const char *text, const char *word);
/* A domain or role named in text: phrase as a whole word or phrase
 * (vigil_text_has_word), as written or with its '-' and '_' read as
 * spaces, since people write "machine learning" for the domain
 * "machine-learning" and "code review" for the role "code-review". An
 * empty phrase is never named. */
bool vigil_text_has_phrase(const char *text, const char *phrase);

/* True when s is 1..64 characters of A-Z a-z 0-9 . _ - (an id). */
bool vigil_text_is_id(const char *s);

/* True when s says nothing: NULL, empty, or only spaces, tabs, CRs and
 * LFs. One rule for a text that must say something (an answer to a
 * council question), so the gateway refuses what council would. */
bool vigil_text_blank(const char *s);

#endif
