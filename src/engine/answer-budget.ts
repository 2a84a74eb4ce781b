/**
 * The characters of JSON that what one request builds for its answer (its plans, its explanations,
 * its validation warnings) may hold together. Spent as the parts are built, so that an answer past
 * it is refused or cut before it is made, never after.
 */
export class AnswerBudget {
  private spent = 0;

  constructor(readonly maxLength: number) {}

  /** Whether `characters` more fit; they are counted only when they do. */
  spend(characters: number): boolean {
    if (this.spent + characters > this.maxLength) return false;
    this.spent += characters;
    return true;
  }
}
