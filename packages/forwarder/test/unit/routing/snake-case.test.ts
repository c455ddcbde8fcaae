import { describe, it } from 'mocha';
import { expect } from 'chai';
import { snakeCase } from '../../../src/routing/snake-case';
import { ValidationError } from '../../../../eventrelay/src/errors';

describe('snakeCase (audience trait names)', () => {
  const cases: Array<[string, string]> = [
    ['High Value Users', 'high_value_users'],
    ['highValueUsers', 'high_value_users'],
    ['HighValueUsers', 'high_value_users'],
    ['high_value_users', 'high_value_users'],
    ['high-value users', 'high_value_users'],
    ['  High   Value -- Users!  ', 'high_value_users'],
    ['VIPUsers', 'vip_users'],
    ['VIP', 'vip'],
    ['top10Users', 'top10_users'],
    ['Q3 Buyers', 'q3_buyers'],
    ['2024 buyers', '2024_buyers'],
    ["Don't Churn", 'dont_churn'],
    ['Users’ Favourites', 'users_favourites'],
    ['Café Lovers', 'cafe_lovers'],
    ['churn.risk/high', 'churn_risk_high'],
    ['a', 'a'],
  ];
  for (const [input, expected] of cases) {
    it(`turns ${JSON.stringify(input)} into ${expected}`, () => {
      expect(snakeCase(input)).to.equal(expected);
    });
  }

  it('refuses a name with no letter or digit', () => {
    expect(() => snakeCase(' -!? ')).to.throw(ValidationError, /at least one letter or digit/);
    expect(() => snakeCase('')).to.throw(ValidationError);
  });
});
