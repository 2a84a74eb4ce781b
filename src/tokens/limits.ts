/** The longest token read, in characters. */
export const MAX_TOKEN_LENGTH = 16 * 1024;
