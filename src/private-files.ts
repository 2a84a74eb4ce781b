/** The mode of the files Verdict makes: they hold policies, entities, audit records or decisions, their user's alone. */
export const PRIVATE_FILE = 0o600;

/** The mode of the directories Verdict makes. */
export const PRIVATE_DIRECTORY = 0o700;
