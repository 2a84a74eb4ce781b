/** The response header carrying the policy snapshot revision that the answering process serves. */
export const REVISION_HEADER = 'verdict-revision';
